// Recursive-descent parser of the Jinja subset, following Jinja2's grammar and precedence
// (conditional < or < and < not < comparisons and `in` < + - < ~ < * / // % < ** < unary signs
// < postfix . [] () with filters | and tests `is`). Nesting is bounded: templates come from
// strangers.
#pragma once

#include <vector>

#include "core/status.h"
#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace qlinear::text::jinja {

inline constexpr int kMaxNesting = 200;

// Errors say "line N: ..." and name the construct.
Result<Program> parse(const std::vector<Token>& tokens);

}  // namespace qlinear::text::jinja
