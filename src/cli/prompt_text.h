// The text side of `generate`: the checkpoint folder's tokenizer (tokenizer.json,
// tokenizer_config.json) turning a prompt or a chat into ids, and generated ids back into text a
// token at a time, never half a UTF-8 character.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace qlinear {

class PromptText {
 public:
  static Result<std::unique_ptr<PromptText>> open(const std::string& dir);
  virtual ~PromptText() = default;
  // The prompt's ids, with the special tokens the tokenizer adds (BOS).
  virtual Result<std::vector<int32_t>> encode(const std::string& text) = 0;
  // A one-turn chat (system message optional) through the chat template, generation prompt on.
  virtual Result<std::vector<int32_t>> chat_prompt(const std::string& system,
                                                   const std::string& user) = 0;
  // The text `id` completes (may be "" while a UTF-8 character is still incomplete).
  virtual std::string stream(int32_t id) = 0;
  // Whatever the stream still holds.
  virtual std::string flush() = 0;
};

}  // namespace qlinear
