// Unicode character properties and normalization forms (through utf8proc), with the exact
// definitions the Rust side of Hugging Face tokenizers uses (char::is_whitespace, is_numeric,
// is_alphanumeric, to_lowercase; the regex crate's \w).
#pragma once

#include <string>
#include <string_view>

namespace qlinear::text {

bool is_white_space(char32_t cp);      // the White_Space property (Rust char::is_whitespace)
bool is_numeric(char32_t cp);          // general category Nd, Nl or No (Rust char::is_numeric)
bool is_alphabetic(char32_t cp);       // the Alphabetic property (Rust char::is_alphabetic)
bool is_word_char(char32_t cp);        // the regex crate's Unicode \w
bool is_mark(char32_t cp);             // general category Mn, Mc or Me
bool is_nonspacing_mark(char32_t cp);  // Mn

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `valid` (valid UTF-8) in the given normalization form.
std::string normalize_unicode(std::string_view valid, NormalForm form);

// Rust's char::to_lowercase applied to every character (full mappings, no context rules).
std::string lowercase(std::string_view valid);

// Python's str.upper / str.lower / str.title on UTF-8 text (simple case mappings).
std::string to_upper(std::string_view valid);
std::string to_lower(std::string_view valid);

}  // namespace qlinear::text
