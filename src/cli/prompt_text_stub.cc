// TEMPORARY until the text module lands (replaced by prompt_text.cc).
#include "cli/prompt_text.h"
namespace qlinear {
Result<std::unique_ptr<PromptText>> PromptText::open(const std::string& dir) {
  return make_error(ErrorCode::kUnsupported, "{}: no tokenizer module in this build", dir);
}
}  // namespace qlinear
