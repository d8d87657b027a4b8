// GPT-2's byte-level alphabet: each of the 256 byte values is shown as one printable character
// (the printable ASCII and Latin-1 bytes as themselves, the others as U+0100 upwards), so BPE
// vocabularies can hold arbitrary bytes as text.
#pragma once

#include <string>
#include <string_view>

namespace qlinear::text {

// UTF-8 of the character that stands for byte b.
std::string_view byte_level_char(unsigned char b);

// The byte a character stands for, or -1 when the character is not in the alphabet.
int byte_level_byte(char32_t cp);

// Every byte of `bytes` replaced by its character.
void append_byte_level_chars(std::string& out, std::string_view bytes);

}  // namespace qlinear::text
