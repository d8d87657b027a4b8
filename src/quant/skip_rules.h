// Name-matching rules of formats.md §2, shared by the format parsers: substring lists
// (modules_to_not_convert, ignored_layers, modules_in_block_to_quantize), exact-or-"re:" patterns
// (compressed-tensors ignore / targets, online FP8 ignore), start-anchored regexes (GPTQ
// dynamic) and AutoRound's "is this key a regex" test.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace qlinear::quant_internal {

// A regular expression from a checkpoint's config, matched in linear time (RE2). Patterns come
// from strangers: std::regex backtracks exponentially on "(a*)*b" and "a?a?a?...aaa", recurses
// without bound and overflows on "a{99999999999}" (found by fuzz_quant_gptq / _auto_round).
// RE2 has no backreferences or lookaround; a pattern using them does not compile.
class Regex {
 public:
  bool matches_from_start(std::string_view name) const;  // Python re.match
  bool matches_anywhere(std::string_view name) const;    // Python re.search

 private:
  friend std::optional<Regex> try_compile_regex(std::string_view, std::string*);
  std::shared_ptr<const re2::RE2> re_;
};

// The first entry of `entries` that occurs inside `name` (substring mode: short entries such as
// "linear_attn.in_proj_qkv" must still match the full dotted name).
std::optional<std::string> find_substring_entry(std::string_view name,
                                                const std::vector<std::string>& entries);

// nullopt when RE2 rejects `pattern` (syntax, an unsupported construct, a pattern longer than
// kMaxRegexChars or needing more than its memory bound); `error` then says why.
inline constexpr std::size_t kMaxRegexChars = 1024;
std::optional<Regex> try_compile_regex(std::string_view pattern, std::string* error = nullptr);
// Python re.match semantics: the match must start at position 0 but need not reach the end.
bool regex_matches_from_start(const Regex& regex, std::string_view name);
// Python re.search semantics: a match anywhere.
bool regex_matches_anywhere(const Regex& regex, std::string_view name);

// AutoRound: a key containing any of * + ? ^ $ ( ) [ ] { } | \ is a regex.
bool looks_like_regex(std::string_view key);

// The LM head: "lm_head" or a name whose last component is "lm_head".
bool is_lm_head(std::string_view layer);

// An exact name, or "re:<regex>" matched from the start of the name.
class NamePattern {
 public:
  // An invalid regex is an error naming `where` (the JSON key or option) and the entry.
  static Result<NamePattern> compile(std::string entry, std::string_view where);
  bool matches(std::string_view name) const;
  bool is_regex() const { return regex_.has_value(); }
  const std::string& text() const { return text_; }  // as written, "re:" included
  // "exact \"lm_head\"" or "re:\"model\\.layers\\.0\\..*\"", for skip reasons.
  std::string describe() const;

 private:
  std::string text_;
  std::optional<Regex> regex_;  // nullopt: exact match
};

Result<std::vector<NamePattern>> compile_name_patterns(const std::vector<std::string>& entries,
                                                       std::string_view where);
// The first pattern that matches `name`, or nullptr.
const NamePattern* find_pattern(std::string_view name, const std::vector<NamePattern>& patterns);

}  // namespace qlinear::quant_internal
