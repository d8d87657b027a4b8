#include "text/jinja/builtins.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <optional>

#include "text/jinja/interpreter.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text::jinja {
namespace {

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

Status type_error(int line, std::string_view what, const Value& v) {
  return Interpreter::error(line, ErrorCode::kInvalidArgument, "{} (got '{}')", what,
                            v.type_name());
}

std::vector<char32_t> decode(const std::string& s) {
  std::vector<char32_t> cps;
  size_t i = 0;
  while (i < s.size()) cps.push_back(next_code_point(s, i));
  return cps;
}
std::string encode(const std::vector<char32_t>& cps, size_t from = 0, size_t to = SIZE_MAX) {
  std::string out;
  for (size_t i = from; i < cps.size() && i < to; ++i) append_utf8(out, cps[i]);
  return out;
}

bool cased(char32_t cp) {
  const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}
char32_t title_of(char32_t cp) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp)));
}
char32_t lower_of(char32_t cp) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

std::string py_title(const std::string& s) {
  std::string out;
  bool previous_cased = false;
  for (const char32_t cp : decode(s)) {
    append_utf8(out, previous_cased ? lower_of(cp) : title_of(cp));
    previous_cased = cased(cp);
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  const std::vector<char32_t> cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i)
    append_utf8(out, i == 0 ? title_of(cps[i]) : lower_of(cps[i]));
  return out;
}

// str.strip/lstrip/rstrip(chars=None).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  const std::vector<char32_t> cps = decode(s);
  std::vector<char32_t> set;
  const bool whitespace = chars.is_none() || chars.is_undefined();
  if (!whitespace) set = decode(chars.as_string());
  const auto strip = [&](char32_t cp) {
    return whitespace ? python_isspace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  size_t b = 0;
  size_t e = cps.size();
  if (left) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  return encode(cps, b, e);
}

// str.split(sep=None, maxsplit=-1); from the right for rsplit.
List py_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  List out;
  if (sep.is_none() || sep.is_undefined()) {
    const std::vector<char32_t> cps = decode(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && python_isspace(cps[i])) ++i;
      if (i >= cps.size()) break;
      size_t j = i;
      while (j < cps.size() && !python_isspace(cps[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      // The unsplit remainder keeps its inner whitespace (and its trailing one is stripped
      // only on the side splitting happens from).
      if (!from_right) {
        for (int64_t k = 0; k < maxsplit; ++k) {
          out.push_back(Value::string(encode(cps, words[static_cast<size_t>(k)].first,
                                             words[static_cast<size_t>(k)].second)));
        }
        size_t tail = words[static_cast<size_t>(maxsplit)].first;
        out.push_back(Value::string(encode(cps, tail, words.back().second)));
      } else {
        const size_t keep = words.size() - static_cast<size_t>(maxsplit);
        out.push_back(Value::string(encode(cps, words.front().first, words[keep - 1].second)));
        for (size_t k = keep; k < words.size(); ++k) {
          out.push_back(Value::string(encode(cps, words[k].first, words[k].second)));
        }
      }
      return out;
    }
    for (const auto& [a, b] : words) out.push_back(Value::string(encode(cps, a, b)));
    return out;
  }
  const std::string& d = sep.as_string();
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t at = s.find(d, pos);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(pos, at - pos));
    pos = at + d.size();
  }
  parts.push_back(s.substr(pos));
  if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) > maxsplit + 1) {
    std::vector<std::string> merged;
    if (!from_right) {
      for (int64_t k = 0; k < maxsplit; ++k) merged.push_back(parts[static_cast<size_t>(k)]);
      std::string tail = parts[static_cast<size_t>(maxsplit)];
      for (size_t k = static_cast<size_t>(maxsplit) + 1; k < parts.size(); ++k)
        tail += d + parts[k];
      merged.push_back(tail);
    } else {
      const size_t keep = parts.size() - static_cast<size_t>(maxsplit);
      std::string head = parts[0];
      for (size_t k = 1; k < keep; ++k) head += d + parts[k];
      merged.push_back(head);
      for (size_t k = keep; k < parts.size(); ++k) merged.push_back(parts[k]);
    }
    parts = std::move(merged);
  }
  for (std::string& p : parts) out.push_back(Value::string(std::move(p)));
  return out;
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with,
                        int64_t count) {
  if (count == 0) return s;
  std::string out;
  if (old.empty()) {
    // Python inserts `with` between characters (and at both ends).
    const std::vector<char32_t> cps = decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      if (i < cps.size()) append_utf8(out, cps[i]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += with;
    pos = at + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// Jinja2's attribute lookup for filters: "a.b.0" walks attributes and indices.
Result<Value> attribute_path(Interpreter& in, const Value& item, const Value& path, int line) {
  if (path.is_int()) return in.get_item(item, path, line);
  Value current = item;
  const std::string& p = path.as_string();
  size_t start = 0;
  while (start <= p.size()) {
    const size_t dot = std::min(p.find('.', start), p.size());
    const std::string part = p.substr(start, dot - start);
    int64_t index = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
    if (ec == std::errc() && ptr == part.data() + part.size() && !part.empty()) {
      QL_ASSIGN_OR_RETURN(current, in.get_item(current, Value::integer(index), line));
    } else {
      QL_ASSIGN_OR_RETURN(current, in.get_attribute(current, part, line));
    }
    if (current.is_undefined()) return current;
    start = dot + 1;
  }
  return current;
}

Result<size_t> length_of(const Value& v, int line) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return size_t{0};
    case Kind::kString:
      return count_code_points(v.as_string());
    case Kind::kList:
      return v.as_list().size();
    case Kind::kDict:
      return v.as_dict().items.size();
    default:
      return type_error(line, "object has no len()", v);
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

Result<std::string> string_arg(const Value& v, std::string_view what, int line) {
  if (!v.is_string()) return type_error(line, fmt::format("{} must be a string", what), v);
  return v.as_string();
}

Result<JsonOptions> json_options(Args& a, int line) {
  JsonOptions o;
  QL_ASSIGN_OR_RETURN(const Value indent, a.take(0, "indent", Value::none()));
  QL_ASSIGN_OR_RETURN(const Value ensure_ascii, a.take(1, "ensure_ascii", Value::boolean(false)));
  QL_ASSIGN_OR_RETURN(const Value separators, a.take(2, "separators", Value::none()));
  QL_ASSIGN_OR_RETURN(const Value sort_keys, a.take(3, "sort_keys", Value::boolean(false)));
  QL_RETURN_IF_ERROR(a.done());
  if (indent.is_int()) {
    o.indent = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64));
    o.item_separator.assign(1, ',');  // (not = ",": GCC 12 -Wrestrict false positive)
  } else if (indent.is_string()) {
    return Interpreter::error(line, ErrorCode::kUnsupported,
                              "tojson(indent=<string>) is not supported");
  }
  if (separators.is_list()) {
    const List& s = separators.as_list();
    if (s.size() != 2 || !s[0].is_string() || !s[1].is_string()) {
      return Interpreter::error(line, ErrorCode::kInvalidArgument,
                                "tojson separators must be two strings");
    }
    o.item_separator = s[0].as_string();
    o.key_separator = s[1].as_string();
  }
  o.ensure_ascii = ensure_ascii.truthy();
  o.sort_keys = sort_keys.truthy();
  return o;
}

Result<Value> sort_list(Interpreter& in, List items, bool reverse, bool case_sensitive,
                        const Value& attribute, int line) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = item;
    if (!attribute.is_none()) {
      QL_ASSIGN_OR_RETURN(key, attribute_path(in, item, attribute, line));
    }
    if (!case_sensitive && key.is_string()) key = Value::string(lowercase(key.as_string()));
    keyed.emplace_back(std::move(key), std::move(item));
  }
  Status failure = Status::ok_status();
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    Result<bool> lt = reverse ? less(y.first, x.first) : less(x.first, y.first);
    if (!lt.ok()) {
      if (failure.ok()) failure = lt.status();
      return false;
    }
    return *lt;
  });
  if (!failure.ok())
    return Interpreter::error(line, ErrorCode::kInvalidArgument, "sort: {}", failure.message());
  List out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return Value::list(std::move(out));
}

Result<int64_t> parse_int_string(const std::string& text, int base, bool* ok) {
  std::string s = py_strip(text, Value::none(), true, true);
  std::string digits;
  for (const char c : s) {
    if (c != '_') digits.push_back(c);
  }
  int64_t v = 0;
  const char* begin = digits.data();
  if (!digits.empty() && digits[0] == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, digits.data() + digits.size(), v, base);
  *ok = ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty();
  return v;
}

}  // namespace

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
