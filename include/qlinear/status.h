// Status / Result<T>: qlinear's error model. Library code never throws or aborts on user input;
// every fallible function returns one of these, with a message that names what failed, the
// offending value, the rule, and where (file, tensor or JSON key).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace qlinear {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // a caller or CLI argument is wrong
  kNotFound,         // a file, tensor or key is missing
  kIo,               // the OS refused (open, mmap, write)
  kRefusedFile,      // a path qlinear will not read or write: not a regular file, a link loop,
                     // outside the model folder, over its size limit (docs/errors.md)
  kCorrupt,          // a file's bytes break its format's rules
  kUnsupported,      // valid input qlinear does not handle (bits=3, AWQ gemv, ...)
  kMisconfigured,    // a checkpoint contradicts itself (mis-tagged zeros, fused shards disagree)
  kNoKernel,         // no registered kernel accepts the problem
  kInternal,         // a qlinear bug
};

std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where it happened: "file.safetensors: <message>".
  Status with_context(std::string_view where) const;
  // "corrupt: <message>"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(state_).ok()) {
      state_ = Status(ErrorCode::kInternal, "Result constructed from an ok Status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace qlinear

#define QL_CONCAT_INNER(a, b) a##b
#define QL_CONCAT(a, b) QL_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is an error.
#define QL_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::qlinear::Status ql_status_ = (expr);   \
    if (!ql_status_.ok()) return ql_status_; \
  } while (0)

// `QL_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its error.
#define QL_ASSIGN_OR_RETURN(lhs, expr) \
  QL_ASSIGN_OR_RETURN_IMPL(QL_CONCAT(ql_result_, __LINE__), lhs, expr)
#define QL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
