#include "text/pattern.h"

#include <utility>

namespace qlinear::text {

Result<Pattern> Pattern::parse(const Json& value, std::string_view path) {
  if (!value.is_object() || value.size() != 1) {
    return make_error(ErrorCode::kCorrupt,
                      "{} must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", path,
                      json_excerpt(value));
  }
  const std::string kind = value.begin().key();
  const Json& text = value.begin().value();
  const std::string where = child_path(path, kind);
  if (!text.is_string()) {
    return make_error(ErrorCode::kCorrupt, "{} must be a string, got {}", where,
                      json_excerpt(text));
  }
  const std::string s = text.get<std::string>();
  if (s.empty()) {
    return make_error(ErrorCode::kUnsupported, "{} \"\" (an empty pattern) is not supported",
                      where);
  }
  if (kind == "String") return literal(s);
  if (kind == "Regex") {
    QL_ASSIGN_OR_RETURN(Regex regex, Regex::compile(s, where));
    Pattern p;
    p.literal_ = s;
    p.regex_ = std::make_shared<const Regex>(std::move(regex));
    return p;
  }
  return unsupported_value(child_path(path, "<kind>"), Json(kind), "String, Regex");
}

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

Status Pattern::find_all(std::string_view subject, std::vector<Span>& out) const {
  if (regex_ != nullptr) return regex_->find_all(subject, out);
  size_t pos = 0;
  while (true) {
    const size_t at = subject.find(literal_, pos);
    if (at == std::string_view::npos) break;
    out.push_back({at, at + literal_.size()});
    pos = at + literal_.size();
  }
  return Status::ok_status();
}

}  // namespace qlinear::text
