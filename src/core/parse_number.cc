#include "core/parse_number.h"

#include <fmt/format.h>

#include "core/escape.h"

namespace qlinear {
namespace {

constexpr std::size_t kMaxShownChars = 40;  // a pasted megabyte of digits stays one line

std::string shown(std::string_view text) {
  std::string out = escape_for_terminal(text.substr(0, kMaxShownChars));
  if (text.size() > kMaxShownChars) out += "...";
  return out;
}

Status range_error(std::string_view what, std::string_view text, int64_t min, int64_t max) {
  return make_error(ErrorCode::kInvalidArgument, "{} \"{}\": must be an integer in [{}, {}]", what,
                    shown(text), min, max);
}

}  // namespace

Result<int64_t> parse_int_in_range(std::string_view text, int64_t min, int64_t max,
                                   std::string_view what) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  if (i == text.size()) return range_error(what, text, min, max);
  // Accumulate as a negative number: its range includes INT64_MIN.
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return range_error(what, text, min, max);
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_sub_overflow(value, c - '0', &value)) {
      return range_error(what, text, min, max);
    }
  }
  if (!negative) {
    if (value == INT64_MIN) return range_error(what, text, min, max);
    value = -value;
  }
  if (value < min || value > max) return range_error(what, text, min, max);
  return value;
}

Status check_int_in_range(int64_t value, int64_t min, int64_t max, std::string_view what) {
  if (value >= min && value <= max) return Status::ok_status();
  return range_error(what, std::to_string(value), min, max);
}

}  // namespace qlinear

namespace qlinear {

Result<Dims2D> parse_dims_2d(std::string_view text, int64_t max_extent, int64_t max_product,
                             std::string_view what) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} \"{}\": expected KxN with positive integers (e.g. 4096x14336)", what,
                      shown(text));
  }
  const std::string first_what = fmt::format("{} \"{}\": K", what, shown(text));
  const std::string second_what = fmt::format("{} \"{}\": N", what, shown(text));
  QL_ASSIGN_OR_RETURN(const int64_t first,
                      parse_int_in_range(text.substr(0, x), 1, max_extent, first_what));
  QL_ASSIGN_OR_RETURN(const int64_t second,
                      parse_int_in_range(text.substr(x + 1), 1, max_extent, second_what));
  if (first > max_product / second) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} \"{}\": K*N = {} weights is over the limit of {}", what, shown(text),
                      first * second, max_product);  // extents are small enough to multiply
  }
  return Dims2D{first, second};
}

}  // namespace qlinear
