#include "text/jinja/lexer.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "text/jinja/value.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {
namespace {

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline = False
  return out;
}

// Python's str.rstrip() (Unicode whitespace) length of s.
size_t rstripped_length(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t i = end;
    if (!python_isspace(previous_code_point(s, i))) break;
    end = i;
  }
  return end;
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size()) {
    size_t j = i;
    if (!python_isspace(next_code_point(s, j))) break;
    i = j;
  }
  return i;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's "unicode-escape" decoding of a string literal's body, as Jinja2 applies it.
Result<std::string> unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    const char e = body[++i];
    switch (e) {
      case '\n':
        break;  // line continuation
      case '\\':
      case '\'':
      case '"':
        out.push_back(e);
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 1; k <= n; ++k) {
          const int h = i + k < body.size() ? hex_value(body[i + k]) : -1;
          if (h < 0) {
            return make_error(ErrorCode::kCorrupt, "line {}: truncated \\{} escape", line, e);
          }
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return make_error(ErrorCode::kUnsupported,
                            "line {}: escape \\{} of U+{:X} is not a "
                            "character qlinear can hold",
                            line, e, cp);
        }
        append_utf8(out, cp);
        i += n;
        break;
      }
      case 'N':
        return make_error(ErrorCode::kUnsupported,
                          "line {}: the \\N{{name}} string escape is not supported", line);
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          size_t k = 1;
          while (k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7') {
            cp = cp * 8 + static_cast<uint32_t>(body[i + k] - '0');
            ++k;
          }
          append_utf8(out, cp);
          i += k - 1;
        } else {
          out.push_back('\\');  // unknown escapes stay as written
          out.push_back(e);
        }
    }
  }
  return out;
}

constexpr std::string_view kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                           "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                           "]",  "{",  "}",  ",",  ".",  ":",  "|"};

class Lexer {
 public:
  explicit Lexer(std::string source) : s_(std::move(source)) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;  // the text about to be read starts a line
    size_t pos = 0;
    while (pos < s_.size()) {
      const size_t open = find_open(pos);
      std::string text = s_.substr(pos, open - pos);
      if (open >= s_.size()) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = s_[open + 1];  // '{', '%' or '#'
      const char control = open + 2 < s_.size() ? s_[open + 2] : '\0';
      if (control == '-') {
        text.resize(rstripped_length(text));
      } else if (control != '+' && kind != '{') {
        // lstrip_blocks: spaces and tabs between a line start and a block or comment tag.
        const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (l_pos > 0 || line_starting) {
          bool blank = true;
          for (size_t k = l_pos; k < text.size(); ++k)
            blank = blank && (text[k] == ' ' || text[k] == '\t');
          if (blank) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), pos);
      size_t after = open + 2 + ((control == '-' || control == '+') ? 1 : 0);
      Result<size_t> end = kind == '#'   ? comment(open, after)
                           : kind == '{' ? tag(open, after, TokenKind::kPrintBegin)
                                         : tag(open, after, TokenKind::kBlockBegin);
      if (!end.ok()) return end.status();
      pos = *end;
      line_starting = pos > 0 && s_[pos - 1] == '\n' && pos > open;
    }
    tokens_.push_back({TokenKind::kEnd, "", line_of(s_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_open(size_t from) const {
    size_t i = from;
    while ((i = s_.find('{', i)) != std::string::npos) {
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) {
        return i;
      }
      ++i;
    }
    return s_.size();
  }

  int line_of(size_t offset) {
    while (line_offset_ < offset && line_offset_ < s_.size()) {
      if (s_[line_offset_] == '\n') ++line_;
      ++line_offset_;
    }
    return line_;
  }

  void emit_text(std::string text, size_t at) {
    if (text.empty()) return;
    tokens_.push_back({TokenKind::kText, std::move(text), line_of(at)});
  }

  // After a closing tag at `close_end`: "-" strips all following whitespace; otherwise
  // trim_blocks removes one newline (not for print tags; "+" keeps it).
  size_t after_close(size_t close_end, char control, bool block_like) const {
    if (control == '-') return skip_space(s_, close_end);
    if (block_like && control != '+' && close_end < s_.size() && s_[close_end] == '\n') {
      return close_end + 1;
    }
    return close_end;
  }

  Result<size_t> comment(size_t open, size_t after) {
    const size_t close = s_.find("#}", after);
    if (close == std::string::npos) {
      return make_error(ErrorCode::kCorrupt, "line {}: comment {{# is never closed", line_of(open));
    }
    const char control =
        close > after && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : '\0';
    return after_close(close + 2, control, true);
  }

  // Tokens inside {{ }} or {% %}; returns the offset after the closing tag.
  Result<size_t> tag(size_t open, size_t i, TokenKind begin) {
    const TokenKind end_kind =
        begin == TokenKind::kPrintBegin ? TokenKind::kPrintEnd : TokenKind::kBlockEnd;
    const char close_char = begin == TokenKind::kPrintBegin ? '}' : '%';
    const size_t first_token = tokens_.size();
    tokens_.push_back({begin, begin == TokenKind::kPrintBegin ? "{{" : "{%", line_of(open)});
    int depth = 0;
    while (true) {
      i = skip_space(s_, i);
      if (i >= s_.size()) {
        return make_error(ErrorCode::kCorrupt, "line {}: {} is never closed", line_of(open),
                          begin == TokenKind::kPrintBegin ? "{{" : "{%");
      }
      const int line = line_of(i);
      // Closing tag, unless brackets are open.
      if (depth == 0) {
        char control = '\0';
        size_t at = i;
        if ((s_[at] == '-' || s_[at] == '+') && at + 2 < s_.size() && s_[at + 1] == close_char &&
            s_[at + 2] == '}') {
          control = s_[at];
          ++at;
        }
        if (s_[at] == close_char && at + 1 < s_.size() && s_[at + 1] == '}') {
          tokens_.push_back({end_kind, "", line});
          const size_t close_end = at + 2;
          if (begin == TokenKind::kBlockBegin && is_raw_start(first_token)) {
            return raw_body(first_token, close_end, control);
          }
          return after_close(close_end, control, begin == TokenKind::kBlockBegin);
        }
      }
      const char c = s_[i];
      if (c == '\'' || c == '"') {
        size_t j = i + 1;
        while (j < s_.size() && s_[j] != c) j += s_[j] == '\\' ? 2 : 1;
        if (j >= s_.size()) {
          return make_error(ErrorCode::kCorrupt, "line {}: string literal is never closed", line);
        }
        QL_ASSIGN_OR_RETURN(std::string value,
                            unescape(std::string_view(s_).substr(i + 1, j - i - 1), line));
        tokens_.push_back({TokenKind::kString, std::move(value), line});
        i = j + 1;
        continue;
      }
      if (c >= '0' && c <= '9') {
        QL_ASSIGN_OR_RETURN(i, number(i, line));
        continue;
      }
      if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        size_t j = i;
        while (j < s_.size() &&
               (s_[j] == '_' || (s_[j] >= 'a' && s_[j] <= 'z') || (s_[j] >= 'A' && s_[j] <= 'Z') ||
                (s_[j] >= '0' && s_[j] <= '9'))) {
          ++j;
        }
        tokens_.push_back({TokenKind::kName, s_.substr(i, j - i), line});
        i = j;
        continue;
      }
      bool matched = false;
      for (const std::string_view op : kOperators) {
        if (std::string_view(s_).substr(i, op.size()) == op) {
          if (op == "(" || op == "[" || op == "{") ++depth;
          if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
          tokens_.push_back({TokenKind::kOperator, std::string(op), line});
          i += op.size();
          matched = true;
          break;
        }
      }
      if (!matched) {
        size_t j = i;
        const char32_t cp = next_code_point(s_, j);
        return make_error(ErrorCode::kCorrupt, "line {}: unexpected character {} in a tag", line,
                          cp < 0x80 ? fmt::format("'{}'", static_cast<char>(cp))
                                    : fmt::format("U+{:04X}", static_cast<uint32_t>(cp)));
      }
    }
  }

  Result<size_t> number(size_t i, int line) {
    size_t j = i;
    std::string digits;
    const auto take_digits = [&] {
      while (j < s_.size() &&
             ((s_[j] >= '0' && s_[j] <= '9') ||
              (s_[j] == '_' && j + 1 < s_.size() && s_[j + 1] >= '0' && s_[j + 1] <= '9'))) {
        if (s_[j] != '_') digits.push_back(s_[j]);
        ++j;
      }
    };
    take_digits();
    bool is_float = false;
    // A fraction needs a digit after the dot ("1.x" stays an attribute access).
    if (j + 1 < s_.size() && s_[j] == '.' && s_[j + 1] >= '0' && s_[j + 1] <= '9') {
      is_float = true;
      digits.push_back('.');
      ++j;
      take_digits();
    }
    if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
      size_t k = j + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (k < s_.size() && s_[k] >= '0' && s_[k] <= '9') {
        is_float = true;
        digits += s_.substr(j, k - j);
        j = k;
        take_digits();
      }
    }
    Token t{is_float ? TokenKind::kFloat : TokenKind::kInteger, digits, line};
    if (is_float) {
      t.number = std::strtod(digits.c_str(), nullptr);
    } else {
      const auto [ptr, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), t.integer);
      if (ec != std::errc()) {
        return make_error(ErrorCode::kUnsupported,
                          "line {}: integer literal {} does not fit in 64 bits", line, digits);
      }
    }
    tokens_.push_back(std::move(t));
    return j;
  }

  bool is_raw_start(size_t first_token) const {
    return tokens_.size() == first_token + 3 && tokens_[first_token + 1].kind == TokenKind::kName &&
           tokens_[first_token + 1].text == "raw";
  }

  // {% raw %} ... {% endraw %}: the body is text, verbatim.
  Result<size_t> raw_body(size_t first_token, size_t body_start, char open_control) {
    const int line = tokens_[first_token].line;
    tokens_.resize(first_token);
    size_t start = after_close(body_start, open_control, true);
    size_t search = start;
    while (true) {
      const size_t tag_open = s_.find("{%", search);
      if (tag_open == std::string::npos) {
        return make_error(ErrorCode::kCorrupt,
                          "line {}: {{% raw %}} is never closed by "
                          "{{% endraw %}}",
                          line);
      }
      size_t k = tag_open + 2;
      const char control = k < s_.size() && (s_[k] == '-' || s_[k] == '+') ? s_[k] : '\0';
      if (control != '\0') ++k;
      k = skip_space(s_, k);
      if (std::string_view(s_).substr(k, 6) != "endraw") {
        search = tag_open + 2;
        continue;
      }
      k = skip_space(s_, k + 6);
      char close_control = '\0';
      if (k < s_.size() && (s_[k] == '-' || s_[k] == '+')) close_control = s_[k++];
      if (std::string_view(s_).substr(k, 2) != "%}") {
        search = tag_open + 2;
        continue;
      }
      std::string body = s_.substr(start, tag_open - start);
      if (control == '-') body.resize(rstripped_length(body));
      emit_text(std::move(body), start);
      return after_close(k + 2, close_control, true);
    }
  }

  std::string s_;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_offset_ = 0;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace qlinear::text::jinja
