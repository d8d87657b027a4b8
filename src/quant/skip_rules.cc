#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

constexpr std::string_view kRegexPrefix = "re:";
constexpr std::string_view kRegexChars = "*+?^$()[]{}|\\";

}  // namespace

std::optional<std::string> find_substring_entry(std::string_view name,
                                                const std::vector<std::string>& entries) {
  for (const auto& entry : entries) {
    if (!entry.empty() && name.find(entry) != std::string_view::npos) return entry;
  }
  return std::nullopt;
}

std::optional<std::regex> try_compile_regex(std::string_view pattern) {
  try {
    return std::regex(pattern.begin(), pattern.end(), std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    return std::nullopt;
  }
}

bool regex_matches_from_start(const std::regex& regex, std::string_view name) {
  return std::regex_search(name.begin(), name.end(), regex, std::regex_constants::match_continuous);
}

bool regex_matches_anywhere(const std::regex& regex, std::string_view name) {
  return std::regex_search(name.begin(), name.end(), regex);
}

bool looks_like_regex(std::string_view key) {
  return key.find_first_of(kRegexChars) != std::string_view::npos;
}

bool is_lm_head(std::string_view layer) {
  constexpr std::string_view kHead = "lm_head";
  if (layer == kHead) return true;
  return layer.size() > kHead.size() && layer.ends_with(kHead) &&
         layer[layer.size() - kHead.size() - 1] == '.';
}

Result<NamePattern> NamePattern::compile(std::string entry, std::string_view where) {
  NamePattern pattern;
  if (entry.starts_with(kRegexPrefix)) {
    std::string_view body = std::string_view(entry).substr(kRegexPrefix.size());
    auto regex = try_compile_regex(body);
    if (!regex) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: entry \"{}\" is not a valid regular expression (the text after "
                        "\"re:\" must be an ECMAScript/Python-compatible regex)",
                        where, entry);
    }
    pattern.regex_ = std::make_shared<const std::regex>(std::move(*regex));
  }
  pattern.text_ = std::move(entry);
  return pattern;
}

bool NamePattern::matches(std::string_view name) const {
  if (regex_ == nullptr) return name == text_;
  return regex_matches_from_start(*regex_, name);
}

std::string NamePattern::describe() const {
  if (regex_ == nullptr) return "exact \"" + text_ + "\"";
  return "regex \"" + text_ + "\"";
}

Result<std::vector<NamePattern>> compile_name_patterns(const std::vector<std::string>& entries,
                                                       std::string_view where) {
  std::vector<NamePattern> patterns;
  patterns.reserve(entries.size());
  for (const auto& entry : entries) {
    QL_ASSIGN_OR_RETURN(NamePattern pattern, NamePattern::compile(entry, where));
    patterns.push_back(std::move(pattern));
  }
  return patterns;
}

const NamePattern* find_pattern(std::string_view name, const std::vector<NamePattern>& patterns) {
  for (const auto& pattern : patterns) {
    if (pattern.matches(name)) return &pattern;
  }
  return nullptr;
}

}  // namespace qlinear::quant_internal
