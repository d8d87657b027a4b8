#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <mutex>
#include <utility>

#include "text/utf8.h"

namespace qlinear::text {
namespace {

// Oniguruma's Unicode \s: the White_Space property. PCRE2's \s with UCP also takes U+180E.
constexpr std::string_view kSpaceMembers =
    "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";
// Oniguruma's Unicode \w: Alphabetic, marks, decimal digits, connector punctuation and the
// joiners (PCRE2 10.42's \w is letters, all numbers and "_").
constexpr std::string_view kWordMembers =
    "\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\x{24B6}-\\x{24E9}";

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string pcre2_error_text(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Result<std::string> oniguruma_to_pcre2(std::string_view p, std::string_view where) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;  // inside [...] (Oniguruma allows nested classes)
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) {
        return make_error(ErrorCode::kCorrupt, "{} \"{}\": pattern ends with a backslash", where,
                          p);
      }
      const char e = p[++i];
      switch (e) {
        case 's':
          out +=
              class_depth > 0 ? std::string(kSpaceMembers) : "[" + std::string(kSpaceMembers) + "]";
          break;
        case 'S':
          if (class_depth > 0) {
            // Inside a class PCRE2's \S differs from Oniguruma's only by excluding U+180E.
            out += "\\S\\x{180E}";
          } else {
            out += "[^" + std::string(kSpaceMembers) + "]";
          }
          break;
        case 'w':
          out +=
              class_depth > 0 ? std::string(kWordMembers) : "[" + std::string(kWordMembers) + "]";
          break;
        case 'W':
          if (class_depth > 0) {
            return make_error(ErrorCode::kUnsupported,
                              "{} \"{}\": \\W inside a character class is not supported", where, p);
          }
          out += "[^" + std::string(kWordMembers) + "]";
          break;
        case 'h':  // Oniguruma: a hexadecimal digit (PCRE2: horizontal space)
          out += class_depth > 0 ? "0-9a-fA-F" : "[0-9a-fA-F]";
          break;
        case 'H':
          if (class_depth > 0) {
            return make_error(ErrorCode::kUnsupported,
                              "{} \"{}\": \\H inside a character class is not supported", where, p);
          }
          out += "[^0-9a-fA-F]";
          break;
        case 'u':
          if (i + 4 < p.size() && is_hex(p[i + 1]) && is_hex(p[i + 2]) && is_hex(p[i + 3]) &&
              is_hex(p[i + 4])) {
            out += "\\x{" + std::string(p.substr(i + 1, 4)) + "}";
            i += 4;
          } else {
            return make_error(ErrorCode::kUnsupported, "{} \"{}\": \\u must have 4 hex digits",
                              where, p);
          }
          break;
        default:
          out.push_back('\\');
          out.push_back(e);
          break;
      }
      continue;
    }
    if (class_depth > 0) {
      if (c == '[') {
        if (i + 1 < p.size() && p[i + 1] == ':') {  // POSIX bracket [:alpha:]
          const size_t close = p.find(":]", i + 2);
          if (close != std::string_view::npos) {
            out.append(p.substr(i, close + 2 - i));
            i = close + 1;
            continue;
          }
        }
        return make_error(ErrorCode::kUnsupported,
                          "{} \"{}\": nested character classes are not supported", where, p);
      }
      if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') {
        return make_error(ErrorCode::kUnsupported,
                          "{} \"{}\": character class intersection \"&&\" is not supported", where,
                          p);
      }
      if (c == ']') --class_depth;
      out.push_back(c);
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out.push_back(c);
      // A leading "^" and a leading "]" belong to the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      // Inline flags: Ruby's "m" is PCRE2's "s"; reject it rather than guess.
      size_t j = i + 2;
      while (j < p.size() && (p[j] == 'i' || p[j] == 'm' || p[j] == 'x' || p[j] == '-')) {
        if (p[j] == 'm') {
          return make_error(ErrorCode::kUnsupported,
                            "{} \"{}\": the Ruby inline flag (?m) is not supported", where, p);
        }
        ++j;
      }
    }
    out.push_back(c);
  }
  return out;
}

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(std::string pattern, std::shared_ptr<const Code> code)
    : pattern_(std::move(pattern)), code_(std::move(code)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

Result<Regex> Regex::compile(std::string_view oniguruma_pattern, std::string_view where) {
  QL_ASSIGN_OR_RETURN(std::string translated, oniguruma_to_pcre2(oniguruma_pattern, where));
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (code == nullptr) {
    return make_error(ErrorCode::kUnsupported, "{} \"{}\": PCRE2 cannot compile it ({} at {})",
                      where, oniguruma_pattern, pcre2_error_text(error), offset);
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return Regex(std::string(oniguruma_pattern), std::move(holder));
}

namespace {

// Match block, JIT stack and match context of this thread: every Regex shares them (a match
// block with one pair serves any pattern; only the whole match is read).
struct ThreadMatchState {
  ThreadMatchState() {
    match_data = pcre2_match_data_create(1, nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(match_data);
  }
  pcre2_match_data* match_data;
  pcre2_jit_stack* jit_stack;
  pcre2_match_context* context;
};

}  // namespace

Status Regex::find_all(std::string_view subject, std::vector<Span>& out) const {
  thread_local ThreadMatchState state;
  pcre2_match_data* md = state.match_data;
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t pos = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (pos <= subject.size()) {
    const int rc =
        code_->jit ? pcre2_jit_match(code_->code, data, subject.size(), pos, 0, md, state.context)
                   : pcre2_match(code_->code, data, subject.size(), pos, PCRE2_NO_UTF_CHECK, md,
                                 state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return make_error(ErrorCode::kUnsupported,
                        "regex \"{}\" failed on a {}-byte piece of text: {}", pattern_,
                        subject.size(), pcre2_error_text(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t s = ov[0];
    const size_t e = ov[1];
    if (s == e && have_last && last_end == e) {
      if (pos >= subject.size()) break;
      pos += utf8_length_from_lead(static_cast<unsigned char>(subject[pos]));
      continue;
    }
    out.push_back({s, e});
    have_last = true;
    last_end = e;
    pos = e;
  }
  return Status::ok_status();
}

}  // namespace qlinear::text
