// The tests (`x is name`) and global functions of the Jinja subset.
#include "text/jinja/builtins.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <ctime>

#include "text/jinja/builtin_support.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

Result<bool> apply_test(Interpreter& in, const std::string& name, const Value& v,
                        CallArgs& call_args, int line) {
  (void)in;
  Args a(call_args, name, line);
  const auto no_args = [&](bool result) -> Result<bool> {
    QL_RETURN_IF_ERROR(a.done());
    return result;
  };
  if (name == "defined") return no_args(!v.is_undefined());
  if (name == "undefined") return no_args(v.is_undefined());
  if (name == "none") return no_args(v.is_none());
  if (name == "string") return no_args(v.is_string());
  if (name == "number") return no_args(v.is_number());
  if (name == "integer") return no_args(v.kind() == Kind::kInt);
  if (name == "float") return no_args(v.kind() == Kind::kFloat);
  if (name == "boolean") return no_args(v.kind() == Kind::kBool);
  if (name == "true") return no_args(v.kind() == Kind::kBool && v.as_bool());
  if (name == "false") return no_args(v.kind() == Kind::kBool && !v.as_bool());
  if (name == "mapping") return no_args(v.is_dict());
  if (name == "iterable" || name == "sequence") {
    return no_args(v.is_string() || v.is_list() || v.is_dict() || v.is_undefined());
  }
  if (name == "callable") return no_args(v.is_callable());
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v);
    bool any_cased = false;
    bool all = true;
    for (const char32_t cp : decode(s)) {
      if (!cased(cp)) continue;
      any_cased = true;
      const char32_t mapped =
          name == "lower"
              ? lower_of(cp)
              : static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
      all = all && mapped == cp;
    }
    return no_args(any_cased && all);
  }
  if (name == "even" || name == "odd") {
    QL_RETURN_IF_ERROR(a.done());
    if (!v.is_int()) return type_error(line, fmt::format("the {} test needs an integer", name), v);
    return (v.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    QL_ASSIGN_OR_RETURN(const Value n, a.take(0, "num", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    if (!v.is_int() || !n.is_int() || n.as_int() == 0) {
      return type_error(line, "divisibleby needs integers (and a non-zero divisor)", v);
    }
    return v.as_int() % n.as_int() == 0;
  }
  static const char* const kComparisons[][2] = {
      {"eq", "=="}, {"equalto", "=="},    {"==", "=="}, {"ne", "!="}, {"!=", "!="},
      {"lt", "<"},  {"lessthan", "<"},    {"<", "<"},   {"le", "<="}, {"<=", "<="},
      {"gt", ">"},  {"greaterthan", ">"}, {">", ">"},   {"ge", ">="}, {">=", ">="}};
  for (const auto& [test, op] : kComparisons) {
    if (name != test) continue;
    QL_ASSIGN_OR_RETURN(const Value other, a.take(0, "other", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    const std::string o = op;
    if (o == "==") return equals(v, other);
    if (o == "!=") return !equals(v, other);
    Result<bool> lt = o == "<" || o == ">=" ? less(v, other) : less(other, v);
    if (!lt.ok())
      return Interpreter::error(line, ErrorCode::kInvalidArgument, "{}", lt.status().message());
    return o == "<" || o == ">" ? *lt : !*lt;
  }
  if (name == "in") {
    QL_ASSIGN_OR_RETURN(const Value seq, a.take(0, "seq", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    if (seq.is_string())
      return v.is_string() && seq.as_string().find(v.as_string()) != std::string::npos;
    if (seq.is_dict()) return v.is_string() && seq.as_dict().find(v.as_string()) != nullptr;
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(seq, line));
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return equals(v, x); });
  }
  if (name == "sameas") {
    QL_ASSIGN_OR_RETURN(const Value other, a.take(0, "other", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    if (v.kind() != other.kind()) return false;
    if (v.is_none() || v.kind() == Kind::kBool || v.is_undefined()) return equals(v, other);
    if (v.is_dict() || v.is_namespace()) return &v.namespace_dict() == &other.namespace_dict();
    if (v.is_list()) return &v.as_list() == &other.as_list();
    return false;
  }
  if (name == "escaped") return no_args(false);
  return Interpreter::error(line, ErrorCode::kUnsupported, "test '{}' is not supported", name);
}

void install_globals(Frame& globals) {
  const auto builtin = [&](const std::string& name,
                           std::function<Result<Value>(Interpreter&, CallArgs&, int)> fn) {
    auto c = std::make_shared<Callable>();
    c->name = name;
    c->builtin = std::move(fn);
    globals.set(name, Value::callable(std::move(c)));
  };
  builtin("range", [](Interpreter&, CallArgs& args, int line) -> Result<Value> {
    if (!args.keywords.empty() || args.positional.empty() || args.positional.size() > 3) {
      return Interpreter::error(line, ErrorCode::kInvalidArgument, "range() takes 1 to 3 integers");
    }
    for (const Value& v : args.positional) {
      if (!v.is_int()) return type_error(line, "range() takes integers", v);
    }
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    if (args.positional.size() == 1) {
      stop = args.positional[0].as_int();
    } else {
      start = args.positional[0].as_int();
      stop = args.positional[1].as_int();
      if (args.positional.size() == 3) step = args.positional[2].as_int();
    }
    if (step == 0)
      return Interpreter::error(line, ErrorCode::kInvalidArgument, "range() step must not be zero");
    const double count =
        std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                                static_cast<double>(step)));
    if (count > static_cast<double>(kMaxLoopIterations)) {
      return Interpreter::error(line, ErrorCode::kUnsupported, "range() of more than {} numbers",
                                kMaxLoopIterations);
    }
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      out.push_back(Value::integer(i));
    return Value::list(std::move(out));
  });
  const auto mapping = [](bool is_namespace) {
    return [is_namespace](Interpreter&, CallArgs& args, int line) -> Result<Value> {
      Dict d;
      if (args.positional.size() > 1) {
        return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                  "{}() takes at most one positional argument",
                                  is_namespace ? "namespace" : "dict");
      }
      if (args.positional.size() == 1) {
        if (!args.positional[0].is_dict())
          return type_error(line, "expected a mapping", args.positional[0]);
        d = args.positional[0].as_dict();
      }
      for (auto& [k, v] : args.keywords) d.set(k, v);
      return is_namespace ? Value::namespace_object(std::move(d)) : Value::dict(std::move(d));
    };
  };
  builtin("namespace", mapping(true));
  builtin("dict", mapping(false));
  builtin("raise_exception", [](Interpreter&, CallArgs& args, int line) -> Result<Value> {
    const std::string message =
        args.positional.empty() ? std::string() : to_str(args.positional[0]);
    return Interpreter::error(line, ErrorCode::kInvalidArgument, "the template raised an error: {}",
                              message);
  });
  builtin("strftime_now", [](Interpreter&, CallArgs& args, int line) -> Result<Value> {
    if (args.positional.size() != 1 || !args.positional[0].is_string()) {
      return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                "strftime_now() takes a format string");
    }
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buffer[256];
    const size_t n =
        std::strftime(buffer, sizeof(buffer), args.positional[0].as_string().c_str(), &local);
    return Value::string(std::string(buffer, n));
  });
}

}  // namespace qlinear::text::jinja
