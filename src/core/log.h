// Logging through the application's sink (qlinear/log.h; stderr by default) and the
// QLINEAR_VERBOSE switches (comma list: "dispatch", "run", "load", "all").
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "qlinear/log.h"

namespace qlinear {

// True when QLINEAR_VERBOSE names `topic` (or "all").
bool verbose_enabled(std::string_view topic);

// Hands one line to the sink.
void log_message(LogLevel level, std::string_view topic, std::string_view message);

template <class... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::kInfo, "info", fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::kWarning, "warning", fmt::format(format, std::forward<Args>(args)...));
}
// One line, only when QLINEAR_VERBOSE names `topic`.
template <class... Args>
void log_verbose(std::string_view topic, fmt::format_string<Args...> format, Args&&... args) {
  if (verbose_enabled(topic)) {
    log_message(LogLevel::kVerbose, topic, fmt::format(format, std::forward<Args>(args)...));
  }
}

}  // namespace qlinear
