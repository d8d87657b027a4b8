// UTF-8 helpers shared by the tokenizer and the template engine. "Valid" is Unicode's definition
// (no overlong forms, no surrogates, nothing above U+10FFFF); ill-formed input is repaired the
// way Rust's String::from_utf8_lossy, Python's "replace" and WHATWG's TextDecoder do it: each
// maximal subpart of an ill-formed sequence becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qlinear::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length of the well-formed sequence starting at s[i], or 0 if none starts there; `*incomplete`
// (when non-null) tells whether the bytes are a valid but unfinished prefix cut off by the end.
size_t utf8_sequence_at(std::string_view s, size_t i, bool* incomplete = nullptr);

bool is_valid_utf8(std::string_view s);

// `s` with every maximal ill-formed subpart replaced by U+FFFD.
std::string to_valid_utf8(std::string_view s);

// Bytes at the end of `s` that begin a well-formed sequence the end cut off (0 to 3).
size_t incomplete_utf8_tail(std::string_view s);

// Decodes the code point at s[i] of a valid string and advances i.
inline char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    i += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const char32_t cp = ((b0 & 0x0Fu) << 12) |
                        ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                        (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    i += 3;
    return cp;
  }
  const char32_t cp = ((b0 & 0x07u) << 18) |
                      ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
                      ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) |
                      (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
  i += 4;
  return cp;
}

// Byte length of the character whose lead byte is `lead` in a valid string.
inline size_t utf8_length_from_lead(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Code point before position i (> 0) of a valid string; moves i back to its start.
char32_t previous_code_point(std::string_view s, size_t& i);

void append_utf8(std::string& out, char32_t cp);

size_t count_code_points(std::string_view valid);

}  // namespace qlinear::text
