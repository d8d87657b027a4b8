#include "core/status.h"

namespace qlinear {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kRefusedFile:
      return "refused file";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kMisconfigured:
      return "misconfigured";
    case ErrorCode::kNoKernel:
      return "no kernel";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status Status::with_context(std::string_view where) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", where, message_));
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return fmt::format("{}: {}", error_code_name(code_), message_);
}

}  // namespace qlinear
