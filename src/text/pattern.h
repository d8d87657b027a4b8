// The `pattern` of Split pre-tokenizers and Replace normalizers/decoders: {"String": "..."}
// (a literal) or {"Regex": "..."} (Oniguruma syntax, run by PCRE2; see regex.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/json_fields.h"
#include "text/regex.h"

namespace qlinear::text {

class Pattern {
 public:
  static Result<Pattern> parse(const Json& value, std::string_view path);
  static Pattern literal(std::string text);

  // Non-overlapping matches, leftmost first (for literals: left to right, no overlaps).
  Status find_all(std::string_view subject, std::vector<Span>& out) const;

  bool is_literal() const { return regex_ == nullptr; }
  const std::string& literal_text() const { return literal_; }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

}  // namespace qlinear::text
