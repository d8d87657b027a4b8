#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace qlinear::text {
namespace {

struct Alphabet {
  Alphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = self ? static_cast<char32_t>(b) : next++;
      utf8[static_cast<size_t>(b)].clear();
      append_utf8(utf8[static_cast<size_t>(b)], cp);
      if (cp < byte_of.size()) byte_of[cp] = static_cast<short>(b);
    }
  }
  std::array<std::string, 256> utf8;
  std::array<short, 512> byte_of = make_unset();

  static std::array<short, 512> make_unset() {
    std::array<short, 512> a{};
    a.fill(-1);
    return a;
  }
};

const Alphabet& alphabet() {
  static const Alphabet kAlphabet;
  return kAlphabet;
}

}  // namespace

std::string_view byte_level_char(unsigned char b) { return alphabet().utf8[b]; }

int byte_level_byte(char32_t cp) { return cp < 512 ? alphabet().byte_of[cp] : -1; }

void append_byte_level_chars(std::string& out, std::string_view bytes) {
  const Alphabet& a = alphabet();
  for (const char c : bytes) out += a.utf8[static_cast<unsigned char>(c)];
}

}  // namespace qlinear::text
