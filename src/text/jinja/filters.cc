// The filters of the Jinja subset (`x | name(args)`), with Jinja2's and transformers' semantics.
#include "text/jinja/builtins.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include "text/jinja/builtin_support.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

Result<Value> apply_filter(Interpreter& in, const std::string& name, const Value& v,
                           CallArgs& call_args, int line) {
  Args a(call_args, name, line);
  if (name == "safe") {
    QL_RETURN_IF_ERROR(a.done());
    return v;
  }
  if (name == "tojson") {
    QL_ASSIGN_OR_RETURN(const JsonOptions o, json_options(a, line));
    Result<std::string> j = to_json(v, o);
    if (!j.ok())
      return Interpreter::error(line, ErrorCode::kInvalidArgument, "tojson: {}",
                                j.status().message());
    return Value::string(std::move(j).value());
  }
  if (name == "trim") {
    QL_ASSIGN_OR_RETURN(const Value chars, a.take(0, "chars", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    return Value::string(py_strip(to_str(v), chars, true, true));
  }
  if (name == "length" || name == "count") {
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const size_t n, length_of(v, line));
    return Value::integer(static_cast<int64_t>(n));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    QL_RETURN_IF_ERROR(a.done());
    const std::string s = to_str(v);
    if (name == "upper") return Value::string(to_upper(s));
    if (name == "lower") return Value::string(to_lower(s));
    if (name == "capitalize") return Value::string(py_capitalize(s));
    return Value::string(py_title(s));
  }
  if (name == "string") {
    QL_RETURN_IF_ERROR(a.done());
    return Value::string(to_str(v));
  }
  if (name == "default" || name == "d") {
    QL_ASSIGN_OR_RETURN(const Value fallback, a.take(0, "default_value", Value::string("")));
    QL_ASSIGN_OR_RETURN(const Value boolean, a.take(1, "boolean", Value::boolean(false)));
    QL_RETURN_IF_ERROR(a.done());
    if (v.is_undefined() || (boolean.truthy() && !v.truthy())) return fallback;
    return v;
  }
  if (name == "join") {
    QL_ASSIGN_OR_RETURN(const Value sep, a.take(0, "d", Value::string("")));
    QL_ASSIGN_OR_RETURN(const Value attribute, a.take(1, "attribute", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += to_str(sep);
      Value item = items[i];
      if (!attribute.is_none()) {
        QL_ASSIGN_OR_RETURN(item, attribute_path(in, item, attribute, line));
      }
      out += to_str(item);
    }
    return Value::string(std::move(out));
  }
  if (name == "items" || name == "dictsort") {
    if (v.is_undefined()) {
      QL_RETURN_IF_ERROR(a.done());
      return Value::list({});
    }
    if (!v.is_dict()) return type_error(line, fmt::format("{} expects a mapping", name), v);
    List pairs;
    for (const auto& [k, x] : v.as_dict().items)
      pairs.push_back(Value::list({Value::string(k), x}, true));
    if (name == "items") {
      QL_RETURN_IF_ERROR(a.done());
      return Value::list(std::move(pairs));
    }
    QL_ASSIGN_OR_RETURN(const Value case_sensitive,
                        a.take(0, "case_sensitive", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value by, a.take(1, "by", Value::string("key")));
    QL_ASSIGN_OR_RETURN(const Value reverse, a.take(2, "reverse", Value::boolean(false)));
    QL_RETURN_IF_ERROR(a.done());
    const int64_t index = by.is_string() && by.as_string() == "value" ? 1 : 0;
    return sort_list(in, std::move(pairs), reverse.truthy(), case_sensitive.truthy(),
                     Value::integer(index), line);
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_if = name == "selectattr" || name == "select";
    Value attribute;
    size_t next = 0;
    if (by_attr) {
      QL_ASSIGN_OR_RETURN(attribute, a.take(next++, "attr", std::nullopt));
    }
    QL_ASSIGN_OR_RETURN(const Value test, a.take(next++, "test", Value::none()));
    List test_args = a.rest(next);
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    List out;
    for (const Value& item : items) {
      Value probe = item;
      if (by_attr) {
        QL_ASSIGN_OR_RETURN(probe, attribute_path(in, item, attribute, line));
      }
      bool result = probe.truthy();
      if (!test.is_none()) {
        QL_ASSIGN_OR_RETURN(const std::string test_name, string_arg(test, "the test name", line));
        CallArgs targs{test_args, {}};
        QL_ASSIGN_OR_RETURN(result, apply_test(in, test_name, probe, targs, line));
      }
      if (result == keep_if) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "map") {
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    List out;
    bool by_attribute = false;
    for (const auto& [k, x] : call_args.keywords) by_attribute = by_attribute || k == "attribute";
    if (by_attribute) {
      QL_ASSIGN_OR_RETURN(const Value attribute, a.take(99, "attribute", std::nullopt));
      QL_ASSIGN_OR_RETURN(const Value fallback, a.take(99, "default", Value::undefined()));
      QL_RETURN_IF_ERROR(a.done());
      for (const Value& item : items) {
        QL_ASSIGN_OR_RETURN(Value x, attribute_path(in, item, attribute, line));
        out.push_back(x.is_undefined() ? fallback : x);
      }
      return Value::list(std::move(out));
    }
    QL_ASSIGN_OR_RETURN(const Value filter_name, a.take(0, "filter", std::nullopt));
    QL_ASSIGN_OR_RETURN(const std::string f, string_arg(filter_name, "map's filter name", line));
    List fargs = a.rest(1);
    QL_RETURN_IF_ERROR(a.done());
    for (const Value& item : items) {
      CallArgs sub{fargs, {}};
      QL_ASSIGN_OR_RETURN(Value x, apply_filter(in, f, item, sub, line));
      out.push_back(std::move(x));
    }
    return Value::list(std::move(out));
  }
  if (name == "first" || name == "last") {
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    if (items.empty()) return Value::undefined(fmt::format("{}() of an empty sequence", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    return Value::list(std::move(items));
  }
  if (name == "reverse") {
    QL_RETURN_IF_ERROR(a.done());
    if (v.is_string()) {
      std::vector<char32_t> cps = decode(v.as_string());
      std::reverse(cps.begin(), cps.end());
      return Value::string(encode(cps));
    }
    QL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "sort") {
    QL_ASSIGN_OR_RETURN(const Value reverse, a.take(0, "reverse", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value case_sensitive,
                        a.take(1, "case_sensitive", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value attribute, a.take(2, "attribute", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    return sort_list(in, std::move(items), reverse.truthy(), case_sensitive.truthy(), attribute,
                     line);
  }
  if (name == "unique") {
    QL_ASSIGN_OR_RETURN(const Value case_sensitive,
                        a.take(0, "case_sensitive", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value attribute, a.take(1, "attribute", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    List out;
    List seen;
    for (const Value& item : items) {
      Value key = item;
      if (!attribute.is_none()) {
        QL_ASSIGN_OR_RETURN(key, attribute_path(in, item, attribute, line));
      }
      if (!case_sensitive.truthy() && key.is_string())
        key = Value::string(lowercase(key.as_string()));
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "replace") {
    QL_ASSIGN_OR_RETURN(const Value old, a.take(0, "old", std::nullopt));
    QL_ASSIGN_OR_RETURN(const Value with, a.take(1, "new", std::nullopt));
    QL_ASSIGN_OR_RETURN(const Value count, a.take(2, "count", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    return Value::string(
        replace_all(to_str(v), to_str(old), to_str(with), count.is_int() ? count.as_int() : -1));
  }
  if (name == "indent") {
    QL_ASSIGN_OR_RETURN(const Value width, a.take(0, "width", Value::integer(4)));
    QL_ASSIGN_OR_RETURN(const Value first, a.take(1, "first", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value blank, a.take(2, "blank", Value::boolean(false)));
    QL_RETURN_IF_ERROR(a.done());
    const std::string pad =
        width.is_string()
            ? width.as_string()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 256)), ' ');
    const std::string s = to_str(v);
    std::string out;
    size_t start = 0;
    bool first_line = true;
    while (true) {
      const size_t nl = s.find('\n', start);
      const std::string line_text =
          s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      const bool indent =
          (first_line ? first.truthy() : true) && (blank.truthy() || !line_text.empty());
      if (indent) out += pad;
      out += line_text;
      if (nl == std::string::npos) break;
      out += "\n";
      start = nl + 1;
      first_line = false;
    }
    return Value::string(std::move(out));
  }
  if (name == "int") {
    QL_ASSIGN_OR_RETURN(const Value fallback, a.take(0, "default", Value::integer(0)));
    QL_ASSIGN_OR_RETURN(const Value base, a.take(1, "base", Value::integer(10)));
    QL_RETURN_IF_ERROR(a.done());
    if (v.is_int()) return Value::integer(v.as_int());
    if (v.kind() == Kind::kFloat) {
      if (!std::isfinite(v.as_double())) return fallback;
      return Value::integer(static_cast<int64_t>(std::trunc(v.as_double())));
    }
    if (v.is_string()) {
      bool ok = false;
      const int64_t x = *parse_int_string(v.as_string(), static_cast<int>(base.as_int()), &ok);
      if (ok) return Value::integer(x);
      char* end = nullptr;
      const std::string s = py_strip(v.as_string(), Value::none(), true, true);
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) {
        return Value::integer(static_cast<int64_t>(std::trunc(d)));
      }
    }
    return fallback;
  }
  if (name == "float") {
    QL_ASSIGN_OR_RETURN(const Value fallback, a.take(0, "default", Value::number(0.0)));
    QL_RETURN_IF_ERROR(a.done());
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string()) {
      const std::string s = py_strip(v.as_string(), Value::none(), true, true);
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::number(d);
    }
    return fallback;
  }
  if (name == "abs") {
    QL_RETURN_IF_ERROR(a.done());
    if (v.is_int()) {
      if (v.as_int() == INT64_MIN)
        return Interpreter::error(line, ErrorCode::kUnsupported, "integer overflow");
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_double()));
    return type_error(line, "abs() needs a number", v);
  }
  if (name == "round") {
    QL_ASSIGN_OR_RETURN(const Value precision, a.take(0, "precision", Value::integer(0)));
    QL_ASSIGN_OR_RETURN(const Value method, a.take(1, "method", Value::string("common")));
    QL_RETURN_IF_ERROR(a.done());
    if (!v.is_number()) return type_error(line, "round() needs a number", v);
    const double scale = std::pow(10.0, static_cast<double>(precision.as_int()));
    const double x = v.as_double() * scale;
    const std::string m = to_str(method);
    const double r = m == "floor" ? std::floor(x) : m == "ceil" ? std::ceil(x) : std::nearbyint(x);
    return Value::number(r / scale);
  }
  if (name == "sum") {
    QL_ASSIGN_OR_RETURN(const Value attribute, a.take(0, "attribute", Value::none()));
    QL_ASSIGN_OR_RETURN(Value total, a.take(1, "start", Value::integer(0)));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(v, line));
    for (const Value& item : items) {
      Value x = item;
      if (!attribute.is_none()) {
        QL_ASSIGN_OR_RETURN(x, attribute_path(in, item, attribute, line));
      }
      if (!x.is_number() || !total.is_number()) return type_error(line, "sum() needs numbers", x);
      total = x.is_int() && total.is_int() ? Value::integer(total.as_int() + x.as_int())
                                           : Value::number(total.as_double() + x.as_double());
    }
    return total;
  }
  if (name == "min" || name == "max") {
    QL_ASSIGN_OR_RETURN(const Value case_sensitive,
                        a.take(0, "case_sensitive", Value::boolean(false)));
    QL_ASSIGN_OR_RETURN(const Value attribute, a.take(1, "attribute", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    if (items.empty()) return Value::undefined(fmt::format("{}() of an empty sequence", name));
    QL_ASSIGN_OR_RETURN(const Value sorted, sort_list(in, std::move(items), name == "max",
                                                      case_sensitive.truthy(), attribute, line));
    return sorted.as_list().front();
  }
  if (name == "attr") {
    QL_ASSIGN_OR_RETURN(const Value attr_name, a.take(0, "name", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const std::string n, string_arg(attr_name, "attr's name", line));
    return in.get_attribute(v, n, line);
  }
  if (name == "escape" || name == "e" || name == "forceescape") {
    QL_RETURN_IF_ERROR(a.done());
    return Value::string(html_escape(to_str(v)));
  }
  if (name == "wordcount") {
    QL_RETURN_IF_ERROR(a.done());
    int64_t words = 0;
    bool in_word = false;
    for (const char32_t cp : decode(to_str(v))) {
      const bool w = is_word_char(cp);
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  return Interpreter::error(line, ErrorCode::kUnsupported, "filter '{}' is not supported", name);
}

}  // namespace qlinear::text::jinja
