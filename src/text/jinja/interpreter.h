// Renders a parsed template: scopes as Jinja2 has them (a for-loop iteration and a macro call
// get their own frame; `if` does not; {% set %} assigns in the current frame; namespace()
// objects carry values out of loops), Python semantics for operators, and limits on loop
// iterations, macro recursion and output size.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace qlinear::text::jinja {

inline constexpr size_t kMaxOutputBytes = 64u << 20;
inline constexpr int64_t kMaxLoopIterations = 1'000'000;
inline constexpr int kMaxCallDepth = 64;

class Frame {
 public:
  explicit Frame(std::shared_ptr<Frame> parent) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value value) { vars_[name] = std::move(value); }

 private:
  std::shared_ptr<Frame> parent_;
  std::unordered_map<std::string, Value> vars_;
};

class Interpreter {
 public:
  Result<std::string> render(const Program& program, const nlohmann::ordered_json& context);

  // "line N: message" errors.
  template <class... Args>
  static Status error(int line, ErrorCode code, fmt::format_string<Args...> format,
                      Args&&... args) {
    return Status(
        code, fmt::format("line {}: {}", line, fmt::format(format, std::forward<Args>(args)...)));
  }

  Result<Value> call(const Value& callee, CallArgs& args, int line);
  // Jinja2's getattr(obj, name) / getitem(obj, key): missing -> undefined with a hint.
  Result<Value> get_attribute(const Value& object, const std::string& name, int line);
  Result<Value> get_item(const Value& object, const Value& key, int line);
  // Items of an iterable (list, tuple, dict keys, string characters, undefined: none).
  Result<List> iterate(const Value& v, int line);
  Status count_iteration(int line);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Result<Flow> exec(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out);
  Result<Flow> exec_for(const Stmt& s, const std::shared_ptr<Frame>& frame, std::string& out);
  Result<Value> eval(const Expr& e, const std::shared_ptr<Frame>& frame);
  Result<CallArgs> eval_args(const Expr& e, const std::shared_ptr<Frame>& frame);
  Result<Value> call_macro(const Callable& macro, CallArgs& args, int line);
  Status append(std::string& out, std::string_view text, int line);

  int64_t iterations_ = 0;
  int call_depth_ = 0;
  // Every macro this render defined. A macro holds its defining frame, which holds the macro:
  // render() resets these closures when it returns so that the cycle does not leak.
  std::vector<std::weak_ptr<Callable>> macros_;
};

}  // namespace qlinear::text::jinja
