#include "quant/skip_rules.h"

#include <re2/re2.h>

#include "core/escape.h"

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

std::optional<Regex> try_compile_regex(std::string_view pattern, std::string* error) {
  if (pattern.size() > kMaxRegexChars) {
    if (error != nullptr) *error = fmt::format("longer than {} characters", kMaxRegexChars);
    return std::nullopt;
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(int64_t{1} << 20);  // per pattern; real ones need a few KiB
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    if (error != nullptr) *error = escape_for_terminal(re->error());
    return std::nullopt;
  }
  Regex regex;
  regex.re_ = std::move(re);
  return regex;
}

bool Regex::matches_from_start(std::string_view name) const {
  return re_->Match(re2::StringPiece(name.data(), name.size()), 0, name.size(), RE2::ANCHOR_START,
                    nullptr, 0);
}

bool Regex::matches_anywhere(std::string_view name) const {
  return re_->Match(re2::StringPiece(name.data(), name.size()), 0, name.size(), RE2::UNANCHORED,
                    nullptr, 0);
}

bool regex_matches_from_start(const Regex& regex, std::string_view name) {
  return regex.matches_from_start(name);
}

bool regex_matches_anywhere(const Regex& regex, std::string_view name) {
  return regex.matches_anywhere(name);
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
    std::string why;
    pattern.regex_ = try_compile_regex(body, &why);
    if (!pattern.regex_) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: entry \"{}\" is not a regular expression qlinear accepts ({}; the "
                        "text after \"re:\" is a Python-style regex without backreferences or "
                        "lookaround)",
                        where, escape_for_terminal(entry), why);
    }
  }
  pattern.text_ = std::move(entry);
  return pattern;
}

bool NamePattern::matches(std::string_view name) const {
  if (!regex_) return name == text_;
  return regex_->matches_from_start(name);
}

std::string NamePattern::describe() const {
  if (!regex_) return "exact \"" + text_ + "\"";
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
