#include "cli/option_checks.h"

#include <fmt/format.h>

#include "core/escape.h"
#include "core/parse_number.h"

namespace qlinear {

CLI::Validator int_in_range(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        if (parse_int_in_range(text, min, max, "").ok()) return std::string();
        return fmt::format("\"{}\" is not an integer in [{}, {}]",
                           escape_for_terminal(text.substr(0, 40)), min, max);
      },
      fmt::format("INT in [{}, {}]", min, max));
}

}  // namespace qlinear
