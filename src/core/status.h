// The library's side of the error model: the public Status / Result<T> (qlinear/status.h) plus
// make_error(), which formats messages with fmt (kept out of the public headers so consumers do
// not inherit fmt).
#pragma once

#include <fmt/format.h>

#include <utility>

#include "qlinear/status.h"

namespace qlinear {

template <class... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qlinear
