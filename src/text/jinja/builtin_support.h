// Helpers shared by the filters, tests, methods and globals: argument binding with Python's
// positional-or-keyword rules, code point conversion and Python's str operations. Internal.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja/interpreter.h"
#include "text/jinja/value.h"

namespace qlinear::text::jinja::detail {

using Kind = Value::Kind;

// Positional-or-keyword arguments of a filter, test, method or function.
class Args {
 public:
  Args(CallArgs& args, std::string_view function, int line)
      : args_(args), function_(function), line_(line), used_(args.keywords.size(), false) {}

  Result<Value> take(size_t position, std::string_view name, std::optional<Value> fallback) {
    if (position < args_.positional.size()) {
      positional_used_ = std::max(positional_used_, position + 1);
      return args_.positional[position];
    }
    for (size_t k = 0; k < args_.keywords.size(); ++k) {
      if (args_.keywords[k].first == name) {
        used_[k] = true;
        return args_.keywords[k].second;
      }
    }
    if (fallback) return *fallback;
    return Interpreter::error(line_, ErrorCode::kInvalidArgument, "{}() is missing argument '{}'",
                              function_, name);
  }
  // Positional arguments from `position` on (for *args parameters).
  List rest(size_t position) {
    List out;
    for (size_t i = position; i < args_.positional.size(); ++i) out.push_back(args_.positional[i]);
    positional_used_ = std::max(positional_used_, args_.positional.size());
    return out;
  }
  Status done() const {
    if (positional_used_ < args_.positional.size()) {
      return Interpreter::error(line_, ErrorCode::kInvalidArgument,
                                "{}() got {} positional argument(s), more than it takes", function_,
                                args_.positional.size());
    }
    for (size_t k = 0; k < used_.size(); ++k) {
      if (!used_[k]) {
        return Interpreter::error(line_, ErrorCode::kInvalidArgument,
                                  "{}() got an unexpected keyword argument '{}'", function_,
                                  args_.keywords[k].first);
      }
    }
    return Status::ok_status();
  }

 private:
  CallArgs& args_;
  std::string_view function_;
  int line_;
  std::vector<bool> used_;
  size_t positional_used_ = 0;
};

Status type_error(int line, std::string_view what, const Value& v);

std::vector<char32_t> decode(const std::string& s);
std::string encode(const std::vector<char32_t>& cps, size_t from = 0, size_t to = SIZE_MAX);

bool cased(char32_t cp);
char32_t title_of(char32_t cp);
char32_t lower_of(char32_t cp);

std::string py_title(const std::string& s);

std::string py_capitalize(const std::string& s);

// str.strip/lstrip/rstrip(chars=None).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);

// str.split(sep=None, maxsplit=-1); from the right for rsplit.
List py_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right);

std::string replace_all(const std::string& s, const std::string& old, const std::string& with,
                        int64_t count);

// Jinja2's attribute lookup for filters: "a.b.0" walks attributes and indices.
Result<Value> attribute_path(Interpreter& in, const Value& item, const Value& path, int line);

Result<size_t> length_of(const Value& v, int line);

std::string html_escape(const std::string& s);

Result<std::string> string_arg(const Value& v, std::string_view what, int line);

Result<JsonOptions> json_options(Args& a, int line);

Result<Value> sort_list(Interpreter& in, List items, bool reverse, bool case_sensitive,
                        const Value& attribute, int line);

// Python int(text, base) on a string; *ok false when it is not an integer.
Result<int64_t> parse_int_string(const std::string& text, int base, bool* ok);

}  // namespace qlinear::text::jinja::detail
