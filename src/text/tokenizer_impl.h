// The parts of a loaded tokenizer, shared by encode, decode and the chat template. Internal.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/chat_template.h"
#include "text/decoders.h"
#include "text/normalizers.h"
#include "text/post_processor.h"
#include "text/pre_tokenizers.h"

namespace qlinear::text {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::vector<std::string> additional_special_tokens;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::vector<NamedTemplate> chat_templates;
  std::vector<int32_t> generation_eos_ids;  // generation_config.json eos_token_id
};

struct TokenizerImpl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  BpeModel model;
  bool byte_input = false;  // words reach the model as raw bytes of byte-level characters
  AddedVocabulary added;
  PostProcessor post;
  DecoderSpec decoder;
  TokenizerConfig config;
  std::vector<ChatTemplate> templates;  // parsed chat_templates, same order

  Status encode(std::string_view text, bool add_special, std::vector<int32_t>& ids,
                std::vector<std::string>* tokens) const;
  // The token string of an id (added tokens first), or nullptr.
  const std::string* token_of(int32_t id) const;
};

}  // namespace qlinear::text
