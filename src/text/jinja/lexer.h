// Jinja lexer with the options transformers sets (trim_blocks, lstrip_blocks): text, {{ }},
// {% %} and {# #} with "-" / "+" whitespace control, {% raw %}, Python-style string escapes,
// newlines normalized to "\n" and one trailing newline dropped, as Jinja2 does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::text::jinja {

enum class TokenKind {
  kText,        // template data
  kPrintBegin,  // {{
  kPrintEnd,    // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,  // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;  // text, name, operator, or the decoded string literal
  int line;
  int64_t integer = 0;
  double number = 0.0;
};

// Errors name the line ("line 3: ..."); the caller prefixes the template name.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace qlinear::text::jinja
