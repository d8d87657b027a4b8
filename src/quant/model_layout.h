// The decoder families qlinear runs (Llama, Mistral, Qwen2, Qwen3) as config.json describes
// them: which family, the sizes every tensor must agree with, and the tensors each decoder
// layer has. validate_model (quant/validate_model.h) checks a checkpoint against this.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear {

enum class ModelFamily { kUnknown, kLlama, kMistral, kQwen2, kQwen3 };
std::string_view model_family_name(ModelFamily family);

// Sizes from config.json, with the documented defaults applied (num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads, tie_word_embeddings =
// false), and where each came from, for messages.
struct ModelDims {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  bool kv_heads_given = false;  // false: num_key_value_heads defaulted to num_attention_heads
  bool head_dim_given = false;  // false: head_dim = hidden_size / num_attention_heads
};

struct ModelLayout {
  ModelFamily family = ModelFamily::kUnknown;
  std::string architecture;       // architectures[0] or model_type, for messages
  std::optional<ModelDims> dims;  // known families only
};

// Reads the family and (for a known family) the sizes. `where` names config.json in messages.
// Errors: a size key missing, not a positive integer or out of range; head_dim not given and
// hidden_size not a multiple of num_attention_heads; num_attention_heads not a multiple of
// num_key_value_heads; model_type and architectures naming different families.
Result<ModelLayout> read_model_layout(const nlohmann::json& config, std::string_view where);

}  // namespace qlinear
