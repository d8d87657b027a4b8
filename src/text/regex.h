// Regular expressions of tokenizer.json (Oniguruma syntax, as Hugging Face compiles them) run
// through PCRE2 with UTF, UCP and JIT. The pattern is translated where the two engines differ:
// \s, \S, \w, \W and \h take Oniguruma's Unicode meaning, \uHHHH becomes \x{HHHH}, ^ and $ match
// at line boundaries (Ruby syntax). Constructs PCRE2 would read differently (class intersection
// "&&", the Ruby "(?m)" flag) are rejected with an error instead of being approximated.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::text {

struct Span {
  size_t begin;
  size_t end;
};

class Regex {
 public:
  // `where` names the JSON key in errors, e.g. `pre_tokenizer.pretokenizers[0].pattern.Regex`.
  static Result<Regex> compile(std::string_view oniguruma_pattern, std::string_view where);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends the non-overlapping matches in `subject` (valid UTF-8) to `out`, in order, with the
  // empty-match rule of Rust's and Oniguruma's find_iter: an empty match right after the
  // previous match is skipped.
  // A PCRE2 resource limit hit on huge inputs is an error, never a silently short result.
  Status find_all(std::string_view subject, std::vector<Span>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::string pattern, std::shared_ptr<const Code> code);
  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

// Translates an Oniguruma (Ruby syntax) pattern to PCRE2 syntax; exposed for tests.
Result<std::string> oniguruma_to_pcre2(std::string_view pattern, std::string_view where);

}  // namespace qlinear::text
