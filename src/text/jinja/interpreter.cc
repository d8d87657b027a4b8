#include "text/jinja/interpreter.h"

#include <cmath>
#include <utility>

#include "text/jinja/builtins.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {
namespace {

using Kind = Value::Kind;

// Python's index into a sequence of `size`: negative counts from the end; -1 when outside.
int64_t python_index(int64_t i, size_t size) {
  const auto n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  return i >= 0 && i < n ? i : -1;
}

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> chars;
  size_t i = 0;
  while (i < s.size()) {
    const size_t at = i;
    i += utf8_length_from_lead(static_cast<unsigned char>(s[i]));
    chars.push_back(s.substr(at, i - at));
  }
  return chars;
}

// Python slice indices of [start:stop:step] over `size` elements.
std::vector<size_t> slice_indices(std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step, size_t size) {
  const auto n = static_cast<int64_t>(size);
  std::vector<size_t> out;
  const auto clamp = [&](std::optional<int64_t> v, int64_t lower, int64_t upper, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + n : *v;
    return std::max(lower, std::min(upper, x));
  };
  if (step > 0) {
    const int64_t b = clamp(start, 0, n, 0);
    const int64_t e = clamp(stop, 0, n, n);
    for (int64_t i = b; i < e; i += step) out.push_back(static_cast<size_t>(i));
  } else {
    const int64_t b = clamp(start, -1, n - 1, n - 1);
    const int64_t e = clamp(stop, -1, n - 1, -1);
    for (int64_t i = b; i > e; i += step) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

Result<Value> arithmetic(BinaryOp op, const Value& a, const Value& b, int line) {
  const auto unsupported = [&](const char* sym) {
    return Interpreter::error(line, ErrorCode::kInvalidArgument,
                              "unsupported operand types for {}: '{}' and '{}'", sym, a.type_name(),
                              b.type_name());
  };
  if (op == BinaryOp::kConcat) return Value::string(to_str(a) + to_str(b));
  if (a.is_undefined() || b.is_undefined()) {
    const Value& u = a.is_undefined() ? a : b;
    return Interpreter::error(
        line, ErrorCode::kInvalidArgument, "{}",
        u.as_string().empty() ? "an undefined value is used in arithmetic" : u.as_string());
  }
  if (a.is_number() && b.is_number()) {
    const bool ints = a.is_int() && b.is_int();
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    const double fx = a.as_double();
    const double fy = b.as_double();
    int64_t r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        if (!ints) return Value::number(fx + fy);
        if (__builtin_add_overflow(x, y, &r)) break;
        return Value::integer(r);
      case BinaryOp::kSub:
        if (!ints) return Value::number(fx - fy);
        if (__builtin_sub_overflow(x, y, &r)) break;
        return Value::integer(r);
      case BinaryOp::kMul:
        if (!ints) return Value::number(fx * fy);
        if (__builtin_mul_overflow(x, y, &r)) break;
        return Value::integer(r);
      case BinaryOp::kDiv:
        if (fy == 0.0) {
          return Interpreter::error(line, ErrorCode::kInvalidArgument, "division by zero");
        }
        return Value::number(fx / fy);
      case BinaryOp::kFloorDiv:
      case BinaryOp::kMod: {
        if ((ints && y == 0) || (!ints && fy == 0.0)) {
          return Interpreter::error(line, ErrorCode::kInvalidArgument, "division by zero");
        }
        if (ints) {
          if (x == INT64_MIN && y == -1) break;
          int64_t q = x / y;
          int64_t m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) {
            --q;
            m += y;
          }
          return Value::integer(op == BinaryOp::kFloorDiv ? q : m);
        }
        const double q = std::floor(fx / fy);
        if (op == BinaryOp::kFloorDiv) return Value::number(q);
        return Value::number(fx - q * fy);
      }
      case BinaryOp::kPow: {
        if (ints && y >= 0) {
          int64_t result = 1;
          int64_t base = x;
          int64_t e = y;
          bool overflow = false;
          while (e > 0 && !overflow) {
            if (e & 1) overflow = __builtin_mul_overflow(result, base, &result);
            e >>= 1;
            if (e > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
          }
          if (overflow) break;
          return Value::integer(result);
        }
        if (fx == 0.0 && fy < 0) {
          return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                    "0.0 cannot be raised to a negative power");
        }
        return Value::number(std::pow(fx, fy));
      }
      case BinaryOp::kConcat:
        break;
    }
    return Interpreter::error(line, ErrorCode::kUnsupported,
                              "integer overflow (qlinear's integers are 64-bit)");
  }
  if (op == BinaryOp::kAdd) {
    if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(items), a.is_tuple());
    }
    return unsupported("+");
  }
  if (op == BinaryOp::kMul) {
    const Value* seq = a.is_int() ? &b : &a;
    const Value* count = a.is_int() ? &a : &b;
    if (count->is_int() && (seq->is_string() || seq->is_list())) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      const size_t unit = seq->is_string() ? seq->as_string().size() : seq->as_list().size();
      if (unit > 0 && static_cast<double>(unit) * static_cast<double>(n) > kMaxOutputBytes) {
        return Interpreter::error(line, ErrorCode::kUnsupported,
                                  "repeating a sequence {} times exceeds the output limit", n);
      }
      if (seq->is_string()) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq->as_string();
        return Value::string(std::move(out));
      }
      List items;
      for (int64_t i = 0; i < n; ++i) {
        items.insert(items.end(), seq->as_list().begin(), seq->as_list().end());
      }
      return Value::list(std::move(items), seq->is_tuple());
    }
    return unsupported("*");
  }
  if (op == BinaryOp::kMod && a.is_string()) {
    return Interpreter::error(line, ErrorCode::kUnsupported,
                              "printf-style string formatting (str % value) is not supported");
  }
  static const char* const kSymbols[] = {"+", "-", "*", "/", "//", "%", "**", "~"};
  return unsupported(kSymbols[static_cast<int>(op)]);
}

Result<bool> compare(CompareOp op, const Value& a, const Value& b, int line) {
  switch (op) {
    case CompareOp::kEq:
      return equals(a, b);
    case CompareOp::kNe:
      return !equals(a, b);
    case CompareOp::kIn:
    case CompareOp::kNotIn: {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) {
          return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                    "'in <string>' requires a string on the left, not '{}'",
                                    a.type_name());
        }
        found = b.as_string().find(a.as_string()) != std::string::npos;
      } else if (b.is_list()) {
        for (const Value& x : b.as_list()) found = found || equals(a, x);
      } else if (b.is_dict()) {
        found = a.is_string() && b.as_dict().find(a.as_string()) != nullptr;
      } else if (b.is_undefined()) {
        found = false;  // an undefined value iterates as empty
      } else {
        return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                  "argument of type '{}' is not iterable", b.type_name());
      }
      return op == CompareOp::kIn ? found : !found;
    }
    default:
      break;
  }
  Result<bool> lt = op == CompareOp::kLt || op == CompareOp::kGe ? less(a, b) : less(b, a);
  if (!lt.ok())
    return Interpreter::error(line, ErrorCode::kInvalidArgument, "{}", lt.status().message());
  switch (op) {
    case CompareOp::kLt:
    case CompareOp::kGt:
      return *lt;
    default:  // <=, >=: not (b < a), not (a < b)
      return !*lt;
  }
}

}  // namespace

const Value* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent_.get()) {
    const auto it = f->vars_.find(name);
    if (it != f->vars_.end()) return &it->second;
  }
  return nullptr;
}

Status Interpreter::append(std::string& out, std::string_view text, int line) {
  if (out.size() + text.size() > kMaxOutputBytes) {
    return error(line, ErrorCode::kUnsupported, "the output exceeds {} MiB", kMaxOutputBytes >> 20);
  }
  out.append(text);
  return Status::ok_status();
}

Status Interpreter::count_iteration(int line) {
  if (++iterations_ > kMaxLoopIterations) {
    return error(line, ErrorCode::kUnsupported, "more than {} loop iterations", kMaxLoopIterations);
  }
  return Status::ok_status();
}

Result<std::string> Interpreter::render(const Program& program,
                                        const nlohmann::ordered_json& context) {
  // On every way out: break the macro <-> frame cycles (see macros_).
  struct ReleaseClosures {
    std::vector<std::weak_ptr<Callable>>& macros;
    ~ReleaseClosures() {
      for (const std::weak_ptr<Callable>& weak : macros) {
        if (std::shared_ptr<Callable> macro = weak.lock()) macro->closure.reset();
      }
      macros.clear();
    }
  } release{macros_};
  auto globals = std::make_shared<Frame>(nullptr);
  install_globals(*globals);
  if (context.is_object()) {
    for (const auto& [key, value] : context.items()) globals->set(key, Value::from_json(value));
  }
  auto top = std::make_shared<Frame>(globals);
  std::string out;
  QL_ASSIGN_OR_RETURN(const Flow flow, exec(program.body, top, out));
  if (flow != Flow::kNormal) {
    return make_error(ErrorCode::kCorrupt, "{{% break %}} or {{% continue %}} outside a loop");
  }
  return out;
}

Result<List> Interpreter::iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return List();
    case Kind::kList:
      return v.as_list();
    case Kind::kDict: {
      List keys;
      for (const auto& item : v.as_dict().items) keys.push_back(Value::string(item.first));
      return keys;
    }
    case Kind::kString: {
      List chars;
      for (std::string& c : code_points(v.as_string()))
        chars.push_back(Value::string(std::move(c)));
      return chars;
    }
    default:
      return error(line, ErrorCode::kInvalidArgument, "'{}' object is not iterable", v.type_name());
  }
}

Result<Value> Interpreter::get_attribute(const Value& object, const std::string& name, int line) {
  if (object.is_undefined()) {
    return error(line, ErrorCode::kInvalidArgument, "{}",
                 object.as_string().empty()
                     ? fmt::format("an undefined value has no attribute '{}'", name)
                     : object.as_string());
  }
  if (has_method(object, name)) {
    auto method = std::make_shared<Callable>();
    method->kind = Callable::Kind::kMethod;
    method->name = name;
    method->receiver = object;
    return Value::callable(std::move(method));
  }
  if (object.is_dict() || object.is_namespace()) {
    const Dict& d = object.is_dict() ? object.as_dict() : object.namespace_dict();
    if (const Value* v = d.find(name)) return *v;
  }
  return Value::undefined(
      fmt::format("'{} object' has no attribute '{}'", object.type_name(), name));
}

Result<Value> Interpreter::get_item(const Value& object, const Value& key, int line) {
  if (object.is_undefined()) {
    return error(line, ErrorCode::kInvalidArgument, "{}",
                 object.as_string().empty() ? std::string("an undefined value cannot be indexed")
                                            : object.as_string());
  }
  if ((object.is_dict() || object.is_namespace()) && key.is_string()) {
    const Dict& d = object.is_dict() ? object.as_dict() : object.namespace_dict();
    if (const Value* v = d.find(key.as_string())) return *v;
    if (has_method(object, key.as_string())) return get_attribute(object, key.as_string(), line);
    return Value::undefined(
        fmt::format("'{} object' has no attribute '{}'", object.type_name(), key.as_string()));
  }
  if (object.is_list() && key.is_int()) {
    const int64_t i = python_index(key.as_int(), object.as_list().size());
    if (i >= 0) return object.as_list()[static_cast<size_t>(i)];
    return Value::undefined(
        fmt::format("'{} object' has no element {}", object.type_name(), key.as_int()));
  }
  if (object.is_string() && key.is_int()) {
    const std::vector<std::string> chars = code_points(object.as_string());
    const int64_t i = python_index(key.as_int(), chars.size());
    if (i >= 0) return Value::string(chars[static_cast<size_t>(i)]);
    return Value::undefined(fmt::format("'str object' has no element {}", key.as_int()));
  }
  if (key.is_string()) return get_attribute(object, key.as_string(), line);
  return Value::undefined(
      fmt::format("'{} object' has no element {}", object.type_name(), to_repr(key)));
}

Result<CallArgs> Interpreter::eval_args(const Expr& e, const std::shared_ptr<Frame>& frame) {
  CallArgs args;
  for (const ExprPtr& item : e.items) {
    QL_ASSIGN_OR_RETURN(Value v, eval(*item, frame));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [key, item] : e.kwargs) {
    QL_ASSIGN_OR_RETURN(Value v, eval(*item, frame));
    args.keywords.emplace_back(key, std::move(v));
  }
  return args;
}

Result<Value> Interpreter::call(const Value& callee, CallArgs& args, int line) {
  if (!callee.is_callable()) {
    if (callee.is_undefined() && !callee.as_string().empty()) {
      return error(line, ErrorCode::kInvalidArgument, "{}", callee.as_string());
    }
    return error(line, ErrorCode::kInvalidArgument, "'{}' object is not callable",
                 callee.type_name());
  }
  const Callable& c = callee.as_callable();
  switch (c.kind) {
    case Callable::Kind::kBuiltin:
      return c.builtin(*this, args, line);
    case Callable::Kind::kMethod:
      return call_method(*this, c.receiver, c.name, args, line);
    case Callable::Kind::kMacro:
      return call_macro(c, args, line);
  }
  return error(line, ErrorCode::kInternal, "unknown callable");
}

Result<Value> Interpreter::call_macro(const Callable& macro, CallArgs& args, int line) {
  if (call_depth_ >= kMaxCallDepth) {
    return error(line, ErrorCode::kUnsupported, "macro calls nest deeper than {}", kMaxCallDepth);
  }
  const Stmt& def = *macro.macro;
  if (args.positional.size() > def.params.size()) {
    return error(line, ErrorCode::kInvalidArgument,
                 "macro '{}' takes not more than {} argument(s), got {}", def.text,
                 def.params.size(), args.positional.size());
  }
  auto frame = std::make_shared<Frame>(macro.closure);
  std::vector<bool> bound(def.params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    frame->set(def.params[i], args.positional[i]);
    bound[i] = true;
  }
  for (auto& [key, value] : args.keywords) {
    size_t k = 0;
    while (k < def.params.size() && def.params[k] != key) ++k;
    if (k == def.params.size()) {
      return error(line, ErrorCode::kInvalidArgument, "macro '{}' takes no keyword argument '{}'",
                   def.text, key);
    }
    frame->set(key, value);
    bound[k] = true;
  }
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (bound[i]) continue;
    if (def.defaults[i] != nullptr) {
      QL_ASSIGN_OR_RETURN(Value v, eval(*def.defaults[i], frame));
      frame->set(def.params[i], std::move(v));
    } else {
      frame->set(def.params[i],
                 Value::undefined(fmt::format("parameter '{}' was not provided", def.params[i])));
    }
  }
  ++call_depth_;
  std::string out;
  Result<Flow> flow = exec(def.body, frame, out);
  --call_depth_;
  if (!flow.ok()) return flow.status();
  if (*flow != Flow::kNormal) {
    return error(def.line, ErrorCode::kCorrupt, "{{% break %}} or {{% continue %}} outside a loop");
  }
  return Value::string(std::move(out));
}

Result<Value> Interpreter::eval(const Expr& e, const std::shared_ptr<Frame>& frame) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName: {
      if (const Value* v = frame->lookup(e.name)) return *v;
      return Value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      List items;
      for (const ExprPtr& item : e.items) {
        QL_ASSIGN_OR_RETURN(Value v, eval(*item, frame));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        QL_ASSIGN_OR_RETURN(Value key, eval(*e.items[i], frame));
        if (!key.is_string()) {
          return error(e.line, ErrorCode::kUnsupported,
                       "dict keys other than strings are not supported (got '{}')",
                       key.type_name());
        }
        QL_ASSIGN_OR_RETURN(Value value, eval(*e.items[i + 1], frame));
        d.set(key.as_string(), std::move(value));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kGetAttr: {
      QL_ASSIGN_OR_RETURN(Value object, eval(*e.a, frame));
      return get_attribute(object, e.name, e.line);
    }
    case ExprKind::kGetItem: {
      QL_ASSIGN_OR_RETURN(Value object, eval(*e.a, frame));
      QL_ASSIGN_OR_RETURN(Value key, eval(*e.b, frame));
      return get_item(object, key, e.line);
    }
    case ExprKind::kSlice: {
      QL_ASSIGN_OR_RETURN(Value object, eval(*e.a, frame));
      std::optional<int64_t> parts[3];
      for (int k = 0; k < 3; ++k) {
        if (e.items[static_cast<size_t>(k)] == nullptr) continue;
        QL_ASSIGN_OR_RETURN(Value v, eval(*e.items[static_cast<size_t>(k)], frame));
        if (v.is_none()) continue;
        if (!v.is_int()) {
          return error(e.line, ErrorCode::kInvalidArgument,
                       "slice indices must be integers or None, not '{}'", v.type_name());
        }
        parts[k] = v.as_int();
      }
      const int64_t step = parts[2].value_or(1);
      if (step == 0) return error(e.line, ErrorCode::kInvalidArgument, "slice step cannot be zero");
      if (object.is_list()) {
        List items;
        for (const size_t i : slice_indices(parts[0], parts[1], step, object.as_list().size())) {
          items.push_back(object.as_list()[i]);
        }
        return Value::list(std::move(items), object.is_tuple());
      }
      if (object.is_string()) {
        const std::vector<std::string> chars = code_points(object.as_string());
        std::string out;
        for (const size_t i : slice_indices(parts[0], parts[1], step, chars.size()))
          out += chars[i];
        return Value::string(std::move(out));
      }
      if (object.is_undefined()) {
        return error(e.line, ErrorCode::kInvalidArgument, "{}",
                     object.as_string().empty() ? "an undefined value cannot be sliced"
                                                : object.as_string());
      }
      return error(e.line, ErrorCode::kInvalidArgument, "'{}' object cannot be sliced",
                   object.type_name());
    }
    case ExprKind::kCall: {
      QL_ASSIGN_OR_RETURN(Value callee, eval(*e.a, frame));
      QL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, frame));
      return call(callee, args, e.line);
    }
    case ExprKind::kFilter: {
      QL_ASSIGN_OR_RETURN(Value operand, eval(*e.a, frame));
      QL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, frame));
      return apply_filter(*this, e.name, operand, args, e.line);
    }
    case ExprKind::kTest: {
      QL_ASSIGN_OR_RETURN(Value operand, eval(*e.a, frame));
      QL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, frame));
      QL_ASSIGN_OR_RETURN(const bool result, apply_test(*this, e.name, operand, args, e.line));
      return Value::boolean(result != e.negated);
    }
    case ExprKind::kNot: {
      QL_ASSIGN_OR_RETURN(Value v, eval(*e.a, frame));
      return Value::boolean(!v.truthy());
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      QL_ASSIGN_OR_RETURN(Value v, eval(*e.a, frame));
      if (!v.is_number()) {
        return error(e.line, ErrorCode::kInvalidArgument, "bad operand type for unary {}: '{}'",
                     e.kind == ExprKind::kNeg ? "-" : "+", v.type_name());
      }
      if (e.kind == ExprKind::kPos) return v.is_int() ? Value::integer(v.as_int()) : v;
      if (v.is_int()) {
        if (v.as_int() == INT64_MIN) {
          return error(e.line, ErrorCode::kUnsupported, "integer overflow");
        }
        return Value::integer(-v.as_int());
      }
      return Value::number(-v.as_double());
    }
    case ExprKind::kBinary: {
      QL_ASSIGN_OR_RETURN(Value a, eval(*e.a, frame));
      QL_ASSIGN_OR_RETURN(Value b, eval(*e.b, frame));
      return arithmetic(e.op, a, b, e.line);
    }
    case ExprKind::kCompare: {
      // Python chains: a < b < c means a < b and b < c.
      QL_ASSIGN_OR_RETURN(Value left, eval(*e.a, frame));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        QL_ASSIGN_OR_RETURN(Value right, eval(*e.items[i], frame));
        QL_ASSIGN_OR_RETURN(const bool ok, compare(e.ops[i], left, right, e.line));
        if (!ok) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::kAnd: {
      QL_ASSIGN_OR_RETURN(Value a, eval(*e.a, frame));
      if (!a.truthy()) return a;
      return eval(*e.b, frame);
    }
    case ExprKind::kOr: {
      QL_ASSIGN_OR_RETURN(Value a, eval(*e.a, frame));
      if (a.truthy()) return a;
      return eval(*e.b, frame);
    }
    case ExprKind::kCond: {
      QL_ASSIGN_OR_RETURN(Value cond, eval(*e.a, frame));
      if (cond.truthy()) return eval(*e.b, frame);
      if (e.c == nullptr) return Value::undefined("the conditional expression had no else");
      return eval(*e.c, frame);
    }
  }
  return error(e.line, ErrorCode::kInternal, "unknown expression");
}

Result<Interpreter::Flow> Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Frame>& frame,
                                                std::string& out) {
  QL_ASSIGN_OR_RETURN(const Value iterable, eval(*s.expr, frame));
  QL_ASSIGN_OR_RETURN(const List all, iterate(iterable, s.line));
  const auto bind = [&](Frame& f, const Value& item) -> Status {
    if (!s.target_is_tuple) {
      f.set(s.targets[0], item);
      return Status::ok_status();
    }
    QL_ASSIGN_OR_RETURN(const List parts, iterate(item, s.line));
    if (parts.size() != s.targets.size()) {
      return error(s.line, ErrorCode::kInvalidArgument, "cannot unpack {} values into {} names",
                   parts.size(), s.targets.size());
    }
    for (size_t k = 0; k < parts.size(); ++k) f.set(s.targets[k], parts[k]);
    return Status::ok_status();
  };
  List items;
  if (s.cond != nullptr) {
    for (const Value& item : all) {
      QL_RETURN_IF_ERROR(count_iteration(s.line));
      auto probe = std::make_shared<Frame>(frame);
      QL_RETURN_IF_ERROR(bind(*probe, item));
      QL_ASSIGN_OR_RETURN(const Value keep, eval(*s.cond, probe));
      if (keep.truthy()) items.push_back(item);
    }
  } else {
    items = all;
  }
  const auto n = static_cast<int64_t>(items.size());
  // One loop.cycle for the whole loop; it reads the current index.
  auto index = std::make_shared<int64_t>(0);
  auto cycle = std::make_shared<Callable>();
  cycle->name = "loop.cycle";
  cycle->builtin = [index](Interpreter&, CallArgs& args, int line) -> Result<Value> {
    if (args.positional.empty()) {
      return error(line, ErrorCode::kInvalidArgument, "loop.cycle() needs at least one value");
    }
    return args.positional[static_cast<size_t>(*index) % args.positional.size()];
  };
  const Value cycle_value = Value::callable(std::move(cycle));
  for (int64_t i = 0; i < n; ++i) {
    QL_RETURN_IF_ERROR(count_iteration(s.line));
    *index = i;
    auto iteration = std::make_shared<Frame>(frame);
    QL_RETURN_IF_ERROR(bind(*iteration, items[static_cast<size_t>(i)]));
    Dict loop;
    loop.items.reserve(12);
    const auto add = [&](const char* key, Value v) { loop.items.emplace_back(key, std::move(v)); };
    add("index", Value::integer(i + 1));
    add("index0", Value::integer(i));
    add("revindex", Value::integer(n - i));
    add("revindex0", Value::integer(n - i - 1));
    add("first", Value::boolean(i == 0));
    add("last", Value::boolean(i == n - 1));
    add("length", Value::integer(n));
    add("depth", Value::integer(1));
    add("depth0", Value::integer(0));
    add("previtem",
        i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    add("nextitem",
        i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    add("cycle", cycle_value);
    iteration->set("loop", Value::dict(std::move(loop)));
    QL_ASSIGN_OR_RETURN(const Flow flow, exec(s.body, iteration, out));
    if (flow == Flow::kBreak) break;
  }
  if (n == 0 && !s.else_body.empty()) return exec(s.else_body, frame, out);
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec(const Body& body, const std::shared_ptr<Frame>& frame,
                                            std::string& out) {
  for (const StmtPtr& sp : body) {
    const Stmt& s = *sp;
    switch (s.kind) {
      case StmtKind::kText:
        QL_RETURN_IF_ERROR(append(out, s.text, s.line));
        break;
      case StmtKind::kPrint: {
        QL_ASSIGN_OR_RETURN(const Value v, eval(*s.expr, frame));
        QL_RETURN_IF_ERROR(append(out, to_str(v), s.line));
        break;
      }
      case StmtKind::kIf: {
        bool taken = false;
        for (const auto& [cond, branch] : s.branches) {
          QL_ASSIGN_OR_RETURN(const Value c, eval(*cond, frame));
          if (!c.truthy()) continue;
          taken = true;
          QL_ASSIGN_OR_RETURN(const Flow flow, exec(branch, frame, out));
          if (flow != Flow::kNormal) return flow;
          break;
        }
        if (!taken) {
          QL_ASSIGN_OR_RETURN(const Flow flow, exec(s.else_body, frame, out));
          if (flow != Flow::kNormal) return flow;
        }
        break;
      }
      case StmtKind::kFor: {
        QL_ASSIGN_OR_RETURN(const Flow flow, exec_for(s, frame, out));
        if (flow != Flow::kNormal) return flow;
        break;
      }
      case StmtKind::kSet: {
        QL_ASSIGN_OR_RETURN(Value v, eval(*s.expr, frame));
        if (!s.attr.empty()) {
          const Value* ns = frame->lookup(s.targets[0]);
          if (ns == nullptr || !ns->is_namespace()) {
            return error(s.line, ErrorCode::kInvalidArgument,
                         "cannot assign attribute '{}' on '{}': it is not a namespace()", s.attr,
                         s.targets[0]);
          }
          ns->namespace_dict().set(s.attr, std::move(v));
        } else if (s.target_is_tuple) {
          QL_ASSIGN_OR_RETURN(const List parts, iterate(v, s.line));
          if (parts.size() != s.targets.size()) {
            return error(s.line, ErrorCode::kInvalidArgument,
                         "cannot unpack {} values into {} names", parts.size(), s.targets.size());
          }
          for (size_t k = 0; k < parts.size(); ++k) frame->set(s.targets[k], parts[k]);
        } else {
          frame->set(s.targets[0], std::move(v));
        }
        break;
      }
      case StmtKind::kSetBlock: {
        std::string captured;
        QL_ASSIGN_OR_RETURN(const Flow flow, exec(s.body, frame, captured));
        if (flow != Flow::kNormal) return flow;
        frame->set(s.targets[0], Value::string(std::move(captured)));
        break;
      }
      case StmtKind::kMacro: {
        auto macro = std::make_shared<Callable>();
        macro->kind = Callable::Kind::kMacro;
        macro->name = s.text;
        macro->macro = &s;
        macro->closure = frame;
        macros_.push_back(macro);
        frame->set(s.text, Value::callable(std::move(macro)));
        break;
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kFilterBlock: {
        std::string captured;
        QL_ASSIGN_OR_RETURN(const Flow flow, exec(s.body, frame, captured));
        if (flow != Flow::kNormal) return flow;
        QL_ASSIGN_OR_RETURN(CallArgs args, eval_args(*s.expr, frame));
        QL_ASSIGN_OR_RETURN(
            const Value v,
            apply_filter(*this, s.expr->name, Value::string(std::move(captured)), args, s.line));
        QL_RETURN_IF_ERROR(append(out, to_str(v), s.line));
        break;
      }
      case StmtKind::kBlock: {
        QL_ASSIGN_OR_RETURN(const Flow flow, exec(s.body, frame, out));
        if (flow != Flow::kNormal) return flow;
        break;
      }
    }
  }
  return Flow::kNormal;
}

}  // namespace qlinear::text::jinja
