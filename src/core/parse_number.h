// Strict parsing of numbers that users type (CLI options, "KxN" shapes): decimal digits only, an
// optional leading '-', no overflow, and a documented range, so "99999999999999999999" or "-1"
// become a short error instead of a clamped or wrapped value.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace qlinear {

// `text` as an integer in [min, max]. `what` names it in the error: `--threads "-1": must be an
// integer in [0, 1024]`.
Result<int64_t> parse_int_in_range(std::string_view text, int64_t min, int64_t max,
                                   std::string_view what);

// Error unless min <= value <= max, in the same words as parse_int_in_range.
Status check_int_in_range(int64_t value, int64_t min, int64_t max, std::string_view what);

}  // namespace qlinear

namespace qlinear {

struct Dims2D {
  int64_t first = 0;
  int64_t second = 0;
};

// "KxN" with both in [1, max_extent] (max_extent <= 2^31) and K*N <= max_product: `--shape
// "4096x14336"`. Errors name `what`, the text and the rule.
Result<Dims2D> parse_dims_2d(std::string_view text, int64_t max_extent, int64_t max_product,
                             std::string_view what);

}  // namespace qlinear
