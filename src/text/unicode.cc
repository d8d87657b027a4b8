#include "text/unicode.h"

#include <utf8proc.h>

#include <bitset>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "text/utf8.h"

namespace qlinear::text {
namespace {

utf8proc_propval_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

// Other_Alphabetic code points that are not marks (their general category is So): circled and
// squared Latin letters. Marks with Other_Alphabetic are covered by the mark categories.
bool other_alphabetic_symbol(char32_t cp) {
  return (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
         (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

// Characters whose normalization never interacts with a neighbour: starters (combining class
// 0) that are their own normal form and never appear after the first position of any
// decomposition (so no composition can absorb them). A text splits into independently
// normalizable segments before each of them, and a segment made of them alone is unchanged.
class InertTable {
 public:
  explicit InertTable(bool compat) {
    const utf8proc_option_t decompose =
        static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
    const utf8proc_option_t compose = static_cast<utf8proc_option_t>(
        UTF8PROC_STABLE | UTF8PROC_COMPOSE | (compat ? UTF8PROC_COMPAT : 0));
    auto* not_inert = new std::bitset<0x110000>();
    for (char32_t cp = 0; cp < 0x110000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
      if (p->combining_class != 0) not_inert->set(cp);
      if (p->decomp_seqindex == UINT16_MAX && !(cp >= 0xAC00 && cp <= 0xD7A3)) continue;
      utf8proc_int32_t buf[32];
      utf8proc_int32_t last_boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32,
                                                         decompose, &last_boundclass);
      if (n <= 0 || n > 32) {
        not_inert->set(cp);
        continue;
      }
      for (utf8proc_ssize_t k = 1; k < n; ++k) not_inert->set(static_cast<size_t>(buf[k]));
      // A character that normalizes to something else is not inert either.
      utf8proc_uint8_t text[8];
      const utf8proc_ssize_t len = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), text);
      utf8proc_uint8_t* out = nullptr;
      if (utf8proc_map(text, len, &out, compose) != len ||
          std::string_view(reinterpret_cast<char*>(out), static_cast<size_t>(len)) !=
              std::string_view(reinterpret_cast<char*>(text), static_cast<size_t>(len))) {
        not_inert->set(cp);
      }
      std::free(out);
    }
    // Hangul jamo vowels and trailing consonants compose with what precedes them.
    for (char32_t cp = 0x1161; cp <= 0x1175; ++cp) not_inert->set(cp);
    for (char32_t cp = 0x11A8; cp <= 0x11C2; ++cp) not_inert->set(cp);
    not_inert_.reset(not_inert);
  }
  bool inert(char32_t cp) const { return cp < 0x80 || !not_inert_->test(cp); }

 private:
  std::unique_ptr<std::bitset<0x110000>> not_inert_;
};

const InertTable& inert_table(bool compat) {
  static std::once_flag once[2];
  static std::unique_ptr<InertTable> tables[2];
  const int k = compat ? 1 : 0;
  std::call_once(once[k], [&] { tables[k] = std::make_unique<InertTable>(compat); });
  return *tables[k];
}

std::string utf8proc_normalize(std::string_view s, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &out,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) return std::string(s);  // only on invalid input, which callers never pass
  std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

}  // namespace

bool is_white_space(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_mark(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

bool is_nonspacing_mark(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_alphabetic(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  const auto c = category(cp);
  switch (c) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
      return true;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
      // Most Other_Alphabetic characters are spacing or nonspacing vowel signs; combining
      // accents (class > 0) are not alphabetic.
      return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class == 0;
    default:
      return other_alphabetic_symbol(cp);
  }
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') || cp == '_';
  }
  const auto c = category(cp);
  return is_alphabetic(cp) || c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
         c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_PC ||
         cp == 0x200C || cp == 0x200D;
}

std::string normalize_unicode(std::string_view s, NormalForm form) {
  const bool compat = form == NormalForm::kNfkc || form == NormalForm::kNfkd;
  const bool composes = form == NormalForm::kNfc || form == NormalForm::kNfkc;
  if (!composes) return utf8proc_normalize(s, form);
  const InertTable& table = inert_table(compat);
  // Segments start before each inert character; only segments holding a non-inert character
  // go through utf8proc.
  std::string out;
  size_t segment = 0;
  bool dirty = false;
  size_t i = 0;
  bool copied_prefix = false;
  auto flush = [&](size_t end) {
    if (dirty) {
      if (!copied_prefix) {
        out.assign(s.substr(0, segment));
        copied_prefix = true;
      }
      out += utf8proc_normalize(s.substr(segment, end - segment), form);
    } else if (copied_prefix) {
      out.append(s.substr(segment, end - segment));
    }
  };
  while (i < s.size()) {
    const size_t at = i;
    const char32_t cp = next_code_point(s, i);
    if (table.inert(cp)) {
      flush(at);
      segment = at;
      dirty = false;
    } else {
      dirty = true;
    }
  }
  flush(s.size());
  return copied_prefix ? out : std::string(s);
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = next_code_point(s, i);
    if (cp == 0x130) {  // the one unconditional multi-character lowercase mapping
      out += "i\xCC\x87";
      continue;
    }
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = next_code_point(s, i);
    if (cp == 0xDF) {
      out += "SS";
      continue;
    }
    append_utf8(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

std::string to_lower(std::string_view s) { return lowercase(s); }

}  // namespace qlinear::text
