#include "text/jinja/builtin_support.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <charconv>
#include <cmath>

#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text::jinja::detail {

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

std::string encode(const std::vector<char32_t>& cps, size_t from, size_t to) {
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
  int64_t value = 0;
  const char* begin = digits.data();
  if (!digits.empty() && digits[0] == '+') ++begin;
  const auto [end, error] = std::from_chars(begin, digits.data() + digits.size(), value, base);
  *ok = error == std::errc() && end == digits.data() + digits.size() && !digits.empty();
  return value;
}

}  // namespace qlinear::text::jinja::detail
