#include "text/jinja/parser.h"

#include <fmt/format.h>

#include <initializer_list>
#include <utility>

namespace qlinear::text::jinja {
namespace {

// Statements qlinear does not implement, named in errors.
constexpr std::string_view kUnsupportedStatements[] = {
    "call", "include", "import",    "from",     "extends", "block",   "with",         "autoescape",
    "do",   "trans",   "pluralize", "endblock", "endcall", "endwith", "endautoescape"};

ExprPtr make_expr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

StmtPtr make_stmt(StmtKind kind, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = line;
  return s;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText:
      return "template text";
    case TokenKind::kPrintBegin:
      return "'{{'";
    case TokenKind::kPrintEnd:
      return "'}}'";
    case TokenKind::kBlockBegin:
      return "'{%'";
    case TokenKind::kBlockEnd:
      return "'%}'";
    case TokenKind::kName:
      return "'" + t.text + "'";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kInteger:
    case TokenKind::kFloat:
      return "a number";
    case TokenKind::kOperator:
      return "'" + t.text + "'";
    case TokenKind::kEnd:
      return "the end of the template";
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Result<Program> program() {
    Program p;
    std::string found;
    QL_RETURN_IF_ERROR(body({}, p.body, &found));
    return p;
  }

 private:
  const Token& peek(size_t k = 0) const {
    const size_t at = i_ + k < t_.size() ? i_ + k : t_.size() - 1;
    return t_[at];
  }
  int line() const { return peek().line; }
  bool at_name(std::string_view n, size_t k = 0) const {
    return peek(k).kind == TokenKind::kName && peek(k).text == n;
  }
  bool at_op(std::string_view op, size_t k = 0) const {
    return peek(k).kind == TokenKind::kOperator && peek(k).text == op;
  }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  Status error(const std::string& what) const {
    return make_error(ErrorCode::kCorrupt, "line {}: {}", line(), what);
  }
  Status expect_op(std::string_view op) {
    if (!at_op(op)) return error(fmt::format("expected '{}', found {}", op, describe(peek())));
    next();
    return Status::ok_status();
  }
  Status expect_kind(TokenKind kind, std::string_view what) {
    if (peek().kind != kind)
      return error(fmt::format("expected {}, found {}", what, describe(peek())));
    next();
    return Status::ok_status();
  }
  Result<std::string> expect_name() {
    if (peek().kind != TokenKind::kName) {
      return error(fmt::format("expected a name, found {}", describe(peek())));
    }
    std::string n = peek().text;
    next();
    return n;
  }
  Status enter() {
    if (++depth_ > kMaxNesting) {
      return error(fmt::format("the template nests more than {} levels deep", kMaxNesting));
    }
    return Status::ok_status();
  }
  void leave() { --depth_; }

  // Statements until "{% <one of ends>" (left unconsumed; its name stored in *found).
  Status body(std::initializer_list<std::string_view> ends, Body& out, std::string* found) {
    QL_RETURN_IF_ERROR(enter());
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEnd) {
        if (ends.size() == 0) break;
        std::string list;
        for (const std::string_view e : ends) list += (list.empty() ? "" : " or ") + std::string(e);
        return make_error(ErrorCode::kCorrupt, "line {}: the template ends before {{% {} %}}",
                          t.line, list);
      }
      if (t.kind == TokenKind::kText) {
        auto s = make_stmt(StmtKind::kText, t.line);
        s->text = t.text;
        out.push_back(std::move(s));
        next();
        continue;
      }
      if (t.kind == TokenKind::kPrintBegin) {
        const int at = t.line;
        next();
        auto s = make_stmt(StmtKind::kPrint, at);
        QL_ASSIGN_OR_RETURN(s->expr, tuple(true, ""));
        QL_RETURN_IF_ERROR(expect_kind(TokenKind::kPrintEnd, "'}}'"));
        out.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokenKind::kBlockBegin) {
        const Token& name = peek(1);
        if (name.kind == TokenKind::kName) {
          for (const std::string_view e : ends) {
            if (name.text == e) {
              *found = name.text;
              leave();
              return Status::ok_status();
            }
          }
        }
        QL_ASSIGN_OR_RETURN(StmtPtr s, statement());
        if (s != nullptr) out.push_back(std::move(s));
        continue;
      }
      return error(fmt::format("unexpected {}", describe(t)));
    }
    leave();
    return Status::ok_status();
  }

  // After "{%": consumes through "%}" (and the statement's body and end tag).
  Result<StmtPtr> statement() {
    next();  // {%
    const int at = line();
    if (peek().kind != TokenKind::kName) {
      return error(
          fmt::format("expected a statement name after '{{%', found {}", describe(peek())));
    }
    const std::string name = peek().text;
    for (const std::string_view u : kUnsupportedStatements) {
      if (name == u) {
        return make_error(ErrorCode::kUnsupported, "line {}: {{% {} %}} is not supported", at,
                          name);
      }
    }
    next();
    if (name == "if") return if_statement(at);
    if (name == "for") return for_statement(at);
    if (name == "set") return set_statement(at);
    if (name == "macro") return macro_statement(at);
    if (name == "break" || name == "continue") {
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      return make_stmt(name == "break" ? StmtKind::kBreak : StmtKind::kContinue, at);
    }
    if (name == "generation") {  // transformers' assistant-mask block: renders its body
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      auto s = make_stmt(StmtKind::kBlock, at);
      QL_RETURN_IF_ERROR(closed_body("endgeneration", s->body));
      return s;
    }
    if (name == "filter") {
      auto s = make_stmt(StmtKind::kFilterBlock, at);
      QL_ASSIGN_OR_RETURN(s->expr, filter(nullptr, false));
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      QL_RETURN_IF_ERROR(closed_body("endfilter", s->body));
      return s;
    }
    return make_error(ErrorCode::kCorrupt, "line {}: unknown statement {{% {} %}}", at, name);
  }

  // A body ending in {% end %} (consumed).
  Status closed_body(std::string_view end, Body& out) {
    std::string found;
    QL_RETURN_IF_ERROR(body({end}, out, &found));
    return end_tag(end);
  }
  // At "{% <end>": consumes it through "%}".
  Status end_tag(std::string_view end) {
    next();  // {%
    next();  // the end name
    return expect_kind(TokenKind::kBlockEnd, fmt::format("'%}}' after {}", end));
  }

  Result<StmtPtr> if_statement(int at) {
    auto s = make_stmt(StmtKind::kIf, at);
    while (true) {
      QL_ASSIGN_OR_RETURN(ExprPtr cond, tuple(false, ""));
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      Body branch;
      std::string found;
      QL_RETURN_IF_ERROR(body({"elif", "else", "endif"}, branch, &found));
      s->branches.emplace_back(std::move(cond), std::move(branch));
      next();  // {%
      next();  // elif / else / endif
      if (found == "elif") continue;
      if (found == "else") {
        QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
        QL_RETURN_IF_ERROR(body({"endif"}, s->else_body, &found));
        QL_RETURN_IF_ERROR(end_tag("endif"));
        return s;
      }
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      return s;
    }
  }

  // Loop and assignment targets: name, "a, b", "(a, b)"; with `allow_attr`, "ns.attr".
  Status target(Stmt& s, bool allow_attr, std::string_view stop_name) {
    if (at_op("(")) {
      next();
      s.target_is_tuple = true;
      while (!at_op(")")) {
        QL_ASSIGN_OR_RETURN(std::string n, expect_name());
        s.targets.push_back(std::move(n));
        if (!at_op(",")) break;
        next();
      }
      return expect_op(")");
    }
    QL_ASSIGN_OR_RETURN(std::string n, expect_name());
    s.targets.push_back(std::move(n));
    if (allow_attr && at_op(".")) {
      next();
      QL_ASSIGN_OR_RETURN(s.attr, expect_name());
      return Status::ok_status();
    }
    while (at_op(",")) {
      next();
      s.target_is_tuple = true;
      if (at_name(stop_name) || at_op("=") || peek().kind == TokenKind::kBlockEnd) break;
      QL_ASSIGN_OR_RETURN(std::string more, expect_name());
      s.targets.push_back(std::move(more));
    }
    return Status::ok_status();
  }

  Result<StmtPtr> for_statement(int at) {
    auto s = make_stmt(StmtKind::kFor, at);
    QL_RETURN_IF_ERROR(target(*s, false, "in"));
    if (!at_name("in")) return error(fmt::format("expected 'in', found {}", describe(peek())));
    next();
    QL_ASSIGN_OR_RETURN(s->expr, tuple(false, ""));
    if (at_name("if")) {
      next();
      QL_ASSIGN_OR_RETURN(s->cond, expression(true));
    }
    if (at_name("recursive")) {
      return make_error(ErrorCode::kUnsupported, "line {}: recursive for loops are not supported",
                        line());
    }
    QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
    std::string found;
    QL_RETURN_IF_ERROR(body({"else", "endfor"}, s->body, &found));
    if (found == "else") {
      next();
      next();
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      QL_RETURN_IF_ERROR(body({"endfor"}, s->else_body, &found));
    }
    QL_RETURN_IF_ERROR(end_tag("endfor"));
    return s;
  }

  Result<StmtPtr> set_statement(int at) {
    auto s = make_stmt(StmtKind::kSet, at);
    QL_RETURN_IF_ERROR(target(*s, true, ""));
    if (at_op("=")) {
      next();
      QL_ASSIGN_OR_RETURN(s->expr, tuple(true, ""));
      QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
      return s;
    }
    if (at_op("|")) {
      return make_error(ErrorCode::kUnsupported,
                        "line {}: filters on a {{% set %}} block are not supported", line());
    }
    if (s->targets.size() != 1 || !s->attr.empty()) {
      return error("a {% set %} block assigns exactly one name");
    }
    QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'=' or '%}'"));
    s->kind = StmtKind::kSetBlock;
    QL_RETURN_IF_ERROR(closed_body("endset", s->body));
    return s;
  }

  Result<StmtPtr> macro_statement(int at) {
    auto s = make_stmt(StmtKind::kMacro, at);
    QL_ASSIGN_OR_RETURN(s->text, expect_name());
    QL_RETURN_IF_ERROR(expect_op("("));
    bool defaults_started = false;
    while (!at_op(")")) {
      QL_ASSIGN_OR_RETURN(std::string p, expect_name());
      ExprPtr fallback;
      if (at_op("=")) {
        next();
        QL_ASSIGN_OR_RETURN(fallback, expression(true));
        defaults_started = true;
      } else if (defaults_started) {
        return error("a macro parameter without a default follows one with a default");
      }
      s->params.push_back(std::move(p));
      s->defaults.push_back(std::move(fallback));
      if (!at_op(",")) break;
      next();
    }
    QL_RETURN_IF_ERROR(expect_op(")"));
    QL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "'%}'"));
    QL_RETURN_IF_ERROR(closed_body("endmacro", s->body));
    return s;
  }

  // ---- expressions ----

  bool tuple_ends(std::string_view stop_name) const {
    const Token& t = peek();
    return t.kind == TokenKind::kPrintEnd || t.kind == TokenKind::kBlockEnd || at_op(")") ||
           (!stop_name.empty() && at_name(stop_name));
  }

  // expr, or "a, b, ..." as a tuple. Without `condexpr` the top level is an "or" expression
  // (the "if" of a for loop or an if statement is not a conditional expression).
  Result<ExprPtr> tuple(bool condexpr, std::string_view stop_name, bool parens = false) {
    const int at = line();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty() || parens) {
        if (tuple_ends(stop_name)) break;
      }
      QL_ASSIGN_OR_RETURN(ExprPtr e, expression(condexpr));
      items.push_back(std::move(e));
      if (!at_op(",")) break;
      next();
      is_tuple = true;
    }
    if (!is_tuple) {
      if (items.empty()) {
        auto t = make_expr(ExprKind::kTuple, at);  // "()"
        return t;
      }
      return std::move(items[0]);
    }
    auto t = make_expr(ExprKind::kTuple, at);
    t->items = std::move(items);
    return t;
  }

  Result<ExprPtr> expression(bool condexpr) {
    QL_RETURN_IF_ERROR(enter());
    Result<ExprPtr> e = condexpr ? conditional() : or_expr();
    leave();
    return e;
  }

  Result<ExprPtr> conditional() {
    QL_ASSIGN_OR_RETURN(ExprPtr e, or_expr());
    while (at_name("if")) {
      const int at = line();
      next();
      auto c = make_expr(ExprKind::kCond, at);
      QL_ASSIGN_OR_RETURN(c->a, or_expr());
      if (at_name("else")) {
        next();
        QL_ASSIGN_OR_RETURN(c->c, expression(true));
      }
      c->b = std::move(e);
      e = std::move(c);
    }
    return e;
  }

  Result<ExprPtr> or_expr() {
    QL_ASSIGN_OR_RETURN(ExprPtr e, and_expr());
    while (at_name("or")) {
      const int at = line();
      next();
      auto o = make_expr(ExprKind::kOr, at);
      o->a = std::move(e);
      QL_ASSIGN_OR_RETURN(o->b, and_expr());
      e = std::move(o);
    }
    return e;
  }

  Result<ExprPtr> and_expr() {
    QL_ASSIGN_OR_RETURN(ExprPtr e, not_expr());
    while (at_name("and")) {
      const int at = line();
      next();
      auto o = make_expr(ExprKind::kAnd, at);
      o->a = std::move(e);
      QL_ASSIGN_OR_RETURN(o->b, not_expr());
      e = std::move(o);
    }
    return e;
  }

  Result<ExprPtr> not_expr() {
    if (at_name("not")) {
      const int at = line();
      next();
      QL_RETURN_IF_ERROR(enter());
      auto n = make_expr(ExprKind::kNot, at);
      Result<ExprPtr> inner = not_expr();
      leave();
      if (!inner.ok()) return inner.status();
      n->a = std::move(inner).value();
      return n;
    }
    return compare();
  }

  Result<ExprPtr> compare() {
    const int at = line();
    QL_ASSIGN_OR_RETURN(ExprPtr e, additive());
    std::vector<CompareOp> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      CompareOp op;
      if (at_op("==")) {
        op = CompareOp::kEq;
      } else if (at_op("!=")) {
        op = CompareOp::kNe;
      } else if (at_op("<")) {
        op = CompareOp::kLt;
      } else if (at_op("<=")) {
        op = CompareOp::kLe;
      } else if (at_op(">")) {
        op = CompareOp::kGt;
      } else if (at_op(">=")) {
        op = CompareOp::kGe;
      } else if (at_name("in")) {
        op = CompareOp::kIn;
      } else if (at_name("not") && at_name("in", 1)) {
        op = CompareOp::kNotIn;
        next();
      } else {
        break;
      }
      next();
      QL_ASSIGN_OR_RETURN(ExprPtr rhs, additive());
      ops.push_back(op);
      operands.push_back(std::move(rhs));
    }
    if (ops.empty()) return e;
    auto c = make_expr(ExprKind::kCompare, at);
    c->a = std::move(e);
    c->ops = std::move(ops);
    c->items = std::move(operands);
    return c;
  }

  Result<ExprPtr> binary_chain(Result<ExprPtr> (Parser::*operand)(),
                               std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
    QL_ASSIGN_OR_RETURN(ExprPtr e, (this->*operand)());
    while (true) {
      const BinaryOp* found = nullptr;
      for (const auto& [text, op] : ops) {
        if (at_op(text)) found = &op;
      }
      if (found == nullptr) return e;
      const int at = line();
      next();
      auto b = make_expr(ExprKind::kBinary, at);
      b->op = *found;
      b->a = std::move(e);
      QL_ASSIGN_OR_RETURN(b->b, (this->*operand)());
      e = std::move(b);
    }
  }
  Result<ExprPtr> additive() {
    return binary_chain(&Parser::concat, {{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}});
  }
  Result<ExprPtr> concat() {
    return binary_chain(&Parser::multiplicative, {{"~", BinaryOp::kConcat}});
  }
  Result<ExprPtr> multiplicative() {
    return binary_chain(&Parser::power, {{"*", BinaryOp::kMul},
                                         {"/", BinaryOp::kDiv},
                                         {"//", BinaryOp::kFloorDiv},
                                         {"%", BinaryOp::kMod}});
  }
  Result<ExprPtr> power() {
    return binary_chain(&Parser::unary_with_filters, {{"**", BinaryOp::kPow}});
  }
  Result<ExprPtr> unary_with_filters() { return unary(true); }

  Result<ExprPtr> unary(bool with_filter) {
    QL_RETURN_IF_ERROR(enter());
    ExprPtr e;
    const int at = line();
    if (at_op("-") || at_op("+")) {
      const bool minus = at_op("-");
      next();
      auto u = make_expr(minus ? ExprKind::kNeg : ExprKind::kPos, at);
      Result<ExprPtr> inner = unary(false);
      if (!inner.ok()) {
        leave();
        return inner.status();
      }
      u->a = std::move(inner).value();
      e = std::move(u);
    } else {
      Result<ExprPtr> p = primary();
      if (!p.ok()) {
        leave();
        return p.status();
      }
      e = std::move(p).value();
    }
    Result<ExprPtr> r = postfix(std::move(e));
    if (r.ok() && with_filter) r = filters(std::move(r).value());
    leave();
    return r;
  }

  Result<ExprPtr> primary() {
    const Token& t = peek();
    const int at = t.line;
    switch (t.kind) {
      case TokenKind::kName: {
        auto e = make_expr(ExprKind::kLiteral, at);
        if (t.text == "true" || t.text == "True") {
          e->literal = Value::boolean(true);
        } else if (t.text == "false" || t.text == "False") {
          e->literal = Value::boolean(false);
        } else if (t.text == "none" || t.text == "None") {
          e->literal = Value::none();
        } else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        next();
        return e;
      }
      case TokenKind::kString: {
        std::string s;
        while (peek().kind == TokenKind::kString) {
          s += peek().text;
          next();
        }
        auto e = make_expr(ExprKind::kLiteral, at);
        e->literal = Value::string(std::move(s));
        return e;
      }
      case TokenKind::kInteger: {
        auto e = make_expr(ExprKind::kLiteral, at);
        e->literal = Value::integer(t.integer);
        next();
        return e;
      }
      case TokenKind::kFloat: {
        auto e = make_expr(ExprKind::kLiteral, at);
        e->literal = Value::number(t.number);
        next();
        return e;
      }
      case TokenKind::kOperator:
        if (t.text == "(") {
          next();
          QL_ASSIGN_OR_RETURN(ExprPtr e, tuple(true, "", true));
          QL_RETURN_IF_ERROR(expect_op(")"));
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = make_expr(ExprKind::kList, at);
          while (!at_op("]")) {
            QL_ASSIGN_OR_RETURN(ExprPtr item, expression(true));
            e->items.push_back(std::move(item));
            if (!at_op(",")) break;
            next();
          }
          QL_RETURN_IF_ERROR(expect_op("]"));
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make_expr(ExprKind::kDict, at);
          while (!at_op("}")) {
            QL_ASSIGN_OR_RETURN(ExprPtr key, expression(true));
            QL_RETURN_IF_ERROR(expect_op(":"));
            QL_ASSIGN_OR_RETURN(ExprPtr value, expression(true));
            e->items.push_back(std::move(key));
            e->items.push_back(std::move(value));
            if (!at_op(",")) break;
            next();
          }
          QL_RETURN_IF_ERROR(expect_op("}"));
          return e;
        }
        break;
      default:
        break;
    }
    return error(fmt::format("unexpected {} in an expression", describe(t)));
  }

  Status call_args(Expr& e) {
    QL_RETURN_IF_ERROR(expect_op("("));
    while (!at_op(")")) {
      if (at_op("*") || at_op("**")) {
        return make_error(ErrorCode::kUnsupported,
                          "line {}: argument unpacking (*args, **kwargs) is not supported", line());
      }
      if (peek().kind == TokenKind::kName && at_op("=", 1)) {
        std::string key = peek().text;
        next();
        next();
        QL_ASSIGN_OR_RETURN(ExprPtr value, expression(true));
        e.kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!e.kwargs.empty()) return error("a positional argument follows keyword arguments");
        QL_ASSIGN_OR_RETURN(ExprPtr value, expression(true));
        e.items.push_back(std::move(value));
      }
      if (!at_op(",")) break;
      next();
    }
    return expect_op(")");
  }

  Result<ExprPtr> subscript(ExprPtr object, int at) {
    // After "[": an index, or a slice [start:stop:step] with any part left out.
    ExprPtr start;
    if (!at_op(":")) {
      QL_ASSIGN_OR_RETURN(start, expression(true));
      if (!at_op(":")) {
        QL_RETURN_IF_ERROR(expect_op("]"));
        auto g = make_expr(ExprKind::kGetItem, at);
        g->a = std::move(object);
        g->b = std::move(start);
        return g;
      }
    }
    next();  // ':'
    auto s = make_expr(ExprKind::kSlice, at);
    s->a = std::move(object);
    s->items.push_back(std::move(start));
    ExprPtr stop;
    if (!at_op("]") && !at_op(":")) {
      QL_ASSIGN_OR_RETURN(stop, expression(true));
    }
    s->items.push_back(std::move(stop));
    ExprPtr step;
    if (at_op(":")) {
      next();
      if (!at_op("]")) {
        QL_ASSIGN_OR_RETURN(step, expression(true));
      }
    }
    s->items.push_back(std::move(step));
    QL_RETURN_IF_ERROR(expect_op("]"));
    return s;
  }

  Result<ExprPtr> postfix(ExprPtr e) {
    while (true) {
      const int at = line();
      if (at_op(".")) {
        next();
        if (peek().kind == TokenKind::kName) {
          auto g = make_expr(ExprKind::kGetAttr, at);
          g->a = std::move(e);
          g->name = peek().text;
          next();
          e = std::move(g);
        } else if (peek().kind == TokenKind::kInteger) {
          auto g = make_expr(ExprKind::kGetItem, at);
          g->a = std::move(e);
          g->b = make_expr(ExprKind::kLiteral, at);
          g->b->literal = Value::integer(peek().integer);
          next();
          e = std::move(g);
        } else {
          return error(fmt::format("expected a name after '.', found {}", describe(peek())));
        }
      } else if (at_op("[")) {
        next();
        QL_ASSIGN_OR_RETURN(e, subscript(std::move(e), at));
      } else if (at_op("(")) {
        auto c = make_expr(ExprKind::kCall, at);
        c->a = std::move(e);
        QL_RETURN_IF_ERROR(call_args(*c));
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  // name[(args)] of a filter applied to `operand` (null inside {% filter %}).
  Result<ExprPtr> filter(ExprPtr operand, bool pipe) {
    if (pipe) next();  // '|'
    const int at = line();
    QL_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (at_op(".")) {
      next();
      QL_ASSIGN_OR_RETURN(std::string part, expect_name());
      name += "." + part;
    }
    auto f = make_expr(ExprKind::kFilter, at);
    f->name = std::move(name);
    f->a = std::move(operand);
    if (at_op("(")) QL_RETURN_IF_ERROR(call_args(*f));
    return f;
  }

  Result<ExprPtr> filters(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        QL_ASSIGN_OR_RETURN(e, filter(std::move(e), true));
      } else if (at_name("is")) {
        const int at = line();
        next();
        auto t = make_expr(ExprKind::kTest, at);
        if (at_name("not")) {
          t->negated = true;
          next();
        }
        QL_ASSIGN_OR_RETURN(t->name, expect_name());
        t->a = std::move(e);
        const Token& p = peek();
        if (at_op("(")) {
          QL_RETURN_IF_ERROR(call_args(*t));
        } else if ((p.kind == TokenKind::kName || p.kind == TokenKind::kString ||
                    p.kind == TokenKind::kInteger || p.kind == TokenKind::kFloat || at_op("[") ||
                    at_op("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and")) {
          if (at_name("is")) return error("tests cannot be chained with 'is'");
          QL_ASSIGN_OR_RETURN(ExprPtr arg, primary());
          QL_ASSIGN_OR_RETURN(arg, postfix(std::move(arg)));
          t->items.push_back(std::move(arg));
        }
        e = std::move(t);
      } else if (at_op("(")) {
        const int at = line();
        auto c = make_expr(ExprKind::kCall, at);
        c->a = std::move(e);
        QL_RETURN_IF_ERROR(call_args(*c));
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Program> parse(const std::vector<Token>& tokens) { return Parser(tokens).program(); }

}  // namespace qlinear::text::jinja
