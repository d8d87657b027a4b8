// CLI11 validators for numeric options, on the text the user typed: CLI11's own conversion
// accepts hex and octal, saturates "99999999999999999999" to INT64_MAX and wraps "-1" into an
// unsigned option, and its Range validator prints doubles with 309 digits. These reject all
// of that with a short message (core/parse_number.h does the parsing).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace qlinear {

// A decimal integer in [min, max].
CLI::Validator int_in_range(int64_t min, int64_t max);

// Upper bounds shared by the commands.
inline constexpr int64_t kMaxThreadsOption = 4096;
inline constexpr int64_t kMaxTpOption = 4096;

}  // namespace qlinear
