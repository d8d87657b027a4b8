// Values of the Jinja subset, with Python's semantics (transformers renders chat templates with
// Python Jinja2): truthiness, equality and ordering, str() and repr() formatting, and
// json.dumps for |tojson.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace qlinear::text::jinja {

class Value;
struct Callable;

using List = std::vector<Value>;

// An insertion-ordered string-keyed mapping (Python dicts keep insertion order).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable
  };

  Value() = default;                              // undefined
  static Value undefined(std::string hint = {});  // hint: what was missing, for errors
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(List items, bool tuple = false);
  static Value dict(Dict d);
  static Value namespace_object(Dict d);
  static Value callable(std::shared_ptr<const Callable> c);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_int() const {
    return kind_ == Kind::kInt || kind_ == Kind::kBool;
  }  // Python: bool is int
  bool is_number() const { return is_int() || kind_ == Kind::kFloat; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return s_; }  // also the undefined hint
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& namespace_dict() const { return *dict_; }  // namespaces are mutable
  const Callable& as_callable() const { return *callable_; }

  bool truthy() const;
  std::string type_name() const;  // Python's type name: 'str', 'dict', ...

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> callable_;
};

// Python str() (what {{ }} prints) and repr().
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
std::string python_float_repr(double d);

// Python ==, and <. less() fails on types Python cannot order.
bool equals(const Value& a, const Value& b);
Result<bool> less(const Value& a, const Value& b);

struct JsonOptions {
  int indent = -1;  // -1: no newlines
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
// Python json.dumps(v, ensure_ascii=False, ...) as transformers' tojson calls it.
Result<std::string> to_json(const Value& v, const JsonOptions& options);

// Python's str.isspace for one code point.
bool python_isspace(char32_t cp);

}  // namespace qlinear::text::jinja

namespace qlinear::text::jinja {

struct Stmt;
class Frame;
class Interpreter;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Callable {
  enum class Kind { kMacro, kBuiltin, kMethod };
  Kind kind = Kind::kBuiltin;
  std::string name;
  const Stmt* macro = nullptr;     // kMacro: its definition
  std::shared_ptr<Frame> closure;  // kMacro: the frame it was defined in
  std::function<Result<Value>(Interpreter&, CallArgs&, int line)> builtin;  // kBuiltin
  Value receiver;                                                           // kMethod
};

}  // namespace qlinear::text::jinja
