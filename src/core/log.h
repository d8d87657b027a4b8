// Logging to stderr and the QLINEAR_VERBOSE switches (comma list: "dispatch", "load", "all").
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace qlinear {

// True when QLINEAR_VERBOSE names `topic` (or "all").
bool verbose_enabled(std::string_view topic);

void log_line(std::string_view level, std::string_view message);

template <class... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log_line("info", fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  log_line("warning", fmt::format(format, std::forward<Args>(args)...));
}
// One line, only when QLINEAR_VERBOSE names `topic`.
template <class... Args>
void log_verbose(std::string_view topic, fmt::format_string<Args...> format, Args&&... args) {
  if (verbose_enabled(topic)) log_line(topic, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qlinear
