// Methods of str and dict values that chat templates call (Python's semantics).
#include "text/jinja/builtins.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include "text/jinja/builtin_support.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

bool has_method(const Value& receiver, const std::string& name) {
  static const char* const kStringMethods[] = {
      "strip",      "lstrip",   "rstrip",  "split",   "rsplit",  "splitlines",
      "startswith", "endswith", "upper",   "lower",   "title",   "capitalize",
      "replace",    "find",     "rfind",   "count",   "join",    "isdigit",
      "isalpha",    "isalnum",  "isspace", "islower", "isupper", "format"};
  static const char* const kDictMethods[] = {"items", "keys", "values", "get"};
  if (receiver.is_string()) {
    return std::any_of(std::begin(kStringMethods), std::end(kStringMethods),
                       [&](const char* m) { return name == m; });
  }
  if (receiver.is_dict()) {
    return std::any_of(std::begin(kDictMethods), std::end(kDictMethods),
                       [&](const char* m) { return name == m; });
  }
  return false;
}

Result<Value> call_method(Interpreter& in, const Value& r, const std::string& name,
                          CallArgs& call_args, int line) {
  const std::string qualified = (r.is_string() ? "str." : "dict.") + name;
  Args a(call_args, qualified, line);
  if (r.is_dict()) {
    const Dict& d = r.as_dict();
    if (name == "get") {
      QL_ASSIGN_OR_RETURN(const Value key, a.take(0, "key", std::nullopt));
      QL_ASSIGN_OR_RETURN(const Value fallback, a.take(1, "default", Value::none()));
      QL_RETURN_IF_ERROR(a.done());
      if (key.is_string()) {
        if (const Value* x = d.find(key.as_string())) return *x;
      }
      return fallback;
    }
    QL_RETURN_IF_ERROR(a.done());
    List out;
    for (const auto& [k, x] : d.items) {
      if (name == "items") {
        out.push_back(Value::list({Value::string(k), x}, true));
      } else if (name == "keys") {
        out.push_back(Value::string(k));
      } else {
        out.push_back(x);
      }
    }
    return Value::list(std::move(out));
  }
  const std::string& s = r.as_string();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    QL_ASSIGN_OR_RETURN(const Value chars, a.take(0, "chars", Value::none()));
    QL_RETURN_IF_ERROR(a.done());
    if (!chars.is_none() && !chars.is_string())
      return type_error(line, qualified + " chars must be a string", chars);
    return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    QL_ASSIGN_OR_RETURN(const Value sep, a.take(0, "sep", Value::none()));
    QL_ASSIGN_OR_RETURN(const Value maxsplit, a.take(1, "maxsplit", Value::integer(-1)));
    QL_RETURN_IF_ERROR(a.done());
    if (sep.is_string() && sep.as_string().empty()) {
      return Interpreter::error(line, ErrorCode::kInvalidArgument, "{}: empty separator",
                                qualified);
    }
    if (!sep.is_none() && !sep.is_string())
      return type_error(line, qualified + " sep must be a string", sep);
    return Value::list(py_split(s, sep, maxsplit.as_int(), name == "rsplit"));
  }
  if (name == "splitlines") {
    QL_ASSIGN_OR_RETURN(const Value keepends, a.take(0, "keepends", Value::boolean(false)));
    QL_RETURN_IF_ERROR(a.done());
    List out;
    const std::vector<char32_t> cps = decode(s);
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
      const char32_t c = cps[i];
      const bool breaks = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C ||
                          c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!breaks) continue;
      size_t end = i + 1;
      if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') end = i + 2;
      out.push_back(Value::string(encode(cps, start, keepends.truthy() ? end : i)));
      start = end;
      i = end - 1;
    }
    if (start < cps.size()) out.push_back(Value::string(encode(cps, start)));
    return Value::list(std::move(out));
  }
  if (name == "startswith" || name == "endswith") {
    QL_ASSIGN_OR_RETURN(const Value affix, a.take(0, "prefix", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    List options;
    if (affix.is_string()) {
      options.push_back(affix);
    } else if (affix.is_tuple()) {
      options = affix.as_list();
    } else {
      return type_error(line, qualified + " takes a string or a tuple of strings", affix);
    }
    for (const Value& o : options) {
      if (!o.is_string())
        return type_error(line, qualified + " takes a string or a tuple of strings", o);
      const std::string& p = o.as_string();
      const bool hit = name == "startswith" ? s.compare(0, p.size(), p) == 0
                                            : s.size() >= p.size() &&
                                                  s.compare(s.size() - p.size(), p.size(), p) == 0;
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    QL_RETURN_IF_ERROR(a.done());
    if (name == "upper") return Value::string(to_upper(s));
    if (name == "lower") return Value::string(to_lower(s));
    if (name == "title") return Value::string(py_title(s));
    return Value::string(py_capitalize(s));
  }
  if (name == "replace") {
    QL_ASSIGN_OR_RETURN(const Value old, a.take(0, "old", std::nullopt));
    QL_ASSIGN_OR_RETURN(const Value with, a.take(1, "new", std::nullopt));
    QL_ASSIGN_OR_RETURN(const Value count, a.take(2, "count", Value::integer(-1)));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const std::string o, string_arg(old, qualified + " old", line));
    QL_ASSIGN_OR_RETURN(const std::string w, string_arg(with, qualified + " new", line));
    return Value::string(replace_all(s, o, w, count.as_int()));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    QL_ASSIGN_OR_RETURN(const Value sub, a.take(0, "sub", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const std::string needle, string_arg(sub, qualified + " sub", line));
    if (name == "count") {
      if (needle.empty()) return Value::integer(static_cast<int64_t>(count_code_points(s) + 1));
      int64_t n = 0;
      for (size_t pos = s.find(needle); pos != std::string::npos;
           pos = s.find(needle, pos + needle.size()))
        ++n;
      return Value::integer(n);
    }
    const size_t at = name == "find" ? s.find(needle) : s.rfind(needle);
    if (at == std::string::npos) return Value::integer(-1);
    return Value::integer(
        static_cast<int64_t>(count_code_points(std::string_view(s).substr(0, at))));
  }
  if (name == "join") {
    QL_ASSIGN_OR_RETURN(const Value items_value, a.take(0, "iterable", std::nullopt));
    QL_RETURN_IF_ERROR(a.done());
    QL_ASSIGN_OR_RETURN(const List items, in.iterate(items_value, line));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) return type_error(line, qualified + " needs strings", items[i]);
      if (i > 0) out += s;
      out += items[i].as_string();
    }
    return Value::string(std::move(out));
  }
  if (name == "format") {
    return Interpreter::error(line, ErrorCode::kUnsupported, "str.format() is not supported");
  }
  QL_RETURN_IF_ERROR(a.done());
  const std::vector<char32_t> cps = decode(s);
  bool result = !cps.empty();
  bool any_cased = false;
  for (const char32_t cp : cps) {
    const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    const bool letter = c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
    const bool number = c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
    if (name == "isdigit")
      result = result && (c == UTF8PROC_CATEGORY_ND ||
                          (cp >= 0xB2 && cp <= 0xB9 && cp != 0xB4 && cp != 0xB5 && cp != 0xB6 &&
                           cp != 0xB7 && cp != 0xB8));
    if (name == "isalpha") result = result && letter;
    if (name == "isalnum") result = result && (letter || number);
    if (name == "isspace") result = result && python_isspace(cp);
    if (name == "islower" || name == "isupper") {
      if (!cased(cp)) continue;
      any_cased = true;
      const char32_t mapped =
          name == "islower"
              ? lower_of(cp)
              : static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
      result = result && mapped == cp;
    }
  }
  if (name == "islower" || name == "isupper") result = result && any_cased;
  return Value::boolean(result);
}

}  // namespace qlinear::text::jinja
