#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace qlinear {

bool verbose_enabled(std::string_view topic) {
  const char* env = std::getenv("QLINEAR_VERBOSE");
  if (env == nullptr) return false;
  std::string_view list(env);
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (item == topic || item == "all") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

void log_line(std::string_view level, std::string_view message) {
  fmt::print(stderr, "[qlinear {}] {}\n", level, message);
}

}  // namespace qlinear
