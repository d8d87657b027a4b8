// The decoder architecture of a Hugging Face checkpoint, from config.json (transformers 4 and 5
// layouts) and generation_config.json: Llama (2, 3, 3.1/3.2 with rope_scaling), Mistral, Qwen2,
// Qwen3. Anything else is an error naming the key, the value and what is supported.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "qlinear/dtype.h"

namespace qlinear {

enum class Architecture { kLlama, kMistral, kQwen2, kQwen3 };
std::string_view architecture_name(Architecture arch);

enum class RopeType { kDefault, kLinear, kLlama3, kYarn };
std::string_view rope_type_name(RopeType type);

struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_positions = 0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;  // absent: 0.1 ln(factor) + 1 (or the mscale rule)
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
};

// Defaults a checkpoint's generation_config.json asks for.
struct GenerationDefaults {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<bool> do_sample;
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string architecture;  // as written: "LlamaForCausalLM"
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab = 0;
  int64_t max_positions = 0;
  double rms_eps = 1e-6;
  RopeConfig rope;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // Qwen2; Llama with attention_bias
  bool o_bias = false;    // Llama with attention_bias
  bool mlp_bias = false;
  bool qk_norm = false;  // Qwen3: RMSNorm over each head of q and k before RoPE
  // Sliding-window attention: the window and which layers use it (empty: none).
  int64_t sliding_window = 0;
  std::vector<bool> sliding_layers;
  DType dtype = DType::kBF16;  // torch_dtype / dtype
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;  // generation_config.json's, else config.json's
  GenerationDefaults generation;

  int64_t q_size() const { return heads * head_dim; }
  int64_t kv_size() const { return kv_heads * head_dim; }
  bool layer_is_sliding(int64_t layer) const {
    return sliding_window > 0 && layer < static_cast<int64_t>(sliding_layers.size()) &&
           sliding_layers[static_cast<std::size_t>(layer)];
  }
};

// `config` is config.json, `generation` generation_config.json (or null); `where` names the
// folder in errors.
Result<ModelConfig> parse_model_config(const nlohmann::json& config,
                                       const nlohmann::json* generation, std::string_view where);

// The rotary frequencies of a head: dim/2 inverse frequencies and the attention factor that
// scales cos and sin (1 except for yarn), as transformers computes them.
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1.0;
};
RopeFrequencies rope_frequencies(const ModelConfig& config);

}  // namespace qlinear
