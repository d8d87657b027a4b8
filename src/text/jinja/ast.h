// The parsed template: statements and expressions of the supported subset. Nodes are "fat"
// structs (a kind plus the fields any kind uses) to keep the parser and evaluator short.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace qlinear::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kList,     // items
  kTuple,    // items
  kDict,     // items: key, value, key, value, ...
  kGetAttr,  // a.name
  kGetItem,  // a[b]
  kSlice,    // a[items[0] : items[1] : items[2]] (null parts allowed)
  kCall,     // a(items..., kwargs...)
  kFilter,   // a | name(items..., kwargs...)   (a is null inside {% filter %})
  kTest,     // a is [not] name(items...)
  kNot,      // not a
  kNeg,      // -a
  kPos,      // +a
  kBinary,   // a op b
  kCompare,  // a ops[0] items[0] ops[1] items[1] ...
  kAnd,      // a and b
  kOr,       // a or b
  kCond,     // b if a else c   (c may be null)
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind;
  int line;
  Value literal;
  std::string name;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr a;
  ExprPtr b;
  ExprPtr c;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> ops;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,      // text
  kPrint,     // {{ expr }}
  kIf,        // branches (conditions and bodies), else_body
  kFor,       // targets in expr [if cond]: body, else_body
  kSet,       // targets (or targets[0].attr) = expr
  kSetBlock,  // {% set targets[0] %} body {% endset %}
  kMacro,     // text(params = defaults): body
  kBreak,
  kContinue,
  kFilterBlock,  // {% filter expr %} body
  kBlock,        // body rendered in place ({% generation %})
};

struct Stmt {
  StmtKind kind;
  int line;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  bool target_is_tuple = false;
  std::string attr;
  ExprPtr cond;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // per parameter, null when it has none
};

struct Program {
  Body body;
};

}  // namespace qlinear::text::jinja
