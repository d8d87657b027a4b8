#include "core/escape.h"

#include <fmt/format.h>

#include <cstdint>

namespace qlinear {
namespace {

// Length of the valid UTF-8 sequence at text[i] whose code point is printable (not C1), or 0.
std::size_t printable_utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t j) { return static_cast<uint8_t>(text[j]); };
  const uint8_t lead = byte(i);
  std::size_t length = 0;
  uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t j = 1; j < length; ++j) {
    if ((byte(i + j) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i + j) & 0x3Fu);
  }
  const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  const bool c1 = cp >= 0x80 && cp <= 0x9F;
  if (overlong || surrogate || c1 || cp > 0x10FFFF) return 0;
  return length;
}

bool is_control(uint8_t c) { return c < 0x20 || c == 0x7F; }

std::string escape(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      if (is_control(c) && !(keep_newlines && c == '\n')) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t length = printable_utf8_length(text, i);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace

bool needs_escape(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      if (is_control(c)) return true;
      ++i;
      continue;
    }
    const std::size_t length = printable_utf8_length(text, i);
    if (length == 0) return true;
    i += length;
  }
  return false;
}

std::string escape_for_terminal(std::string_view text) { return escape(text, false); }

std::string escape_message(std::string_view text) { return escape(text, true); }

}  // namespace qlinear
