// tokenizer.json "post_processor": TemplateProcessing (the single-sequence template: special
// tokens before and after $A), ByteLevel (offsets only, no ids) and Sequence of them. It adds
// BOS/EOS-style tokens when special tokens are requested.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/json_fields.h"

namespace qlinear::text {

struct SpecialPiece {
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;
};

class PostProcessor {
 public:
  static Result<PostProcessor> parse(const Json& value, std::string_view path);

  // One template wrapping the sequence: prefix pieces, $A, suffix pieces.
  static PostProcessor wrap(std::vector<SpecialPiece> prefix, std::vector<SpecialPiece> suffix);

  // `ids` (and `tokens` when non-null) of one sequence, wrapped when `add_special`.
  void apply(std::vector<int32_t>& ids, std::vector<std::string>* tokens, bool add_special) const;

 private:
  struct Template {
    std::vector<SpecialPiece> prefix;
    std::vector<SpecialPiece> suffix;
  };
  std::vector<Template> steps_;  // applied in order (a Sequence of templates nests them)
};

}  // namespace qlinear::text
