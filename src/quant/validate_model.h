// Model-level validation: the checks no single tensor or config key can make, in one place.
// plan_linear_layers runs it, so `inspect`, `explain`, `layer` and the runner all get it.
//
//   1. A layer stored quantized but planned dense because no quantization config was found
//      names the config files that were looked for (not "tensor ...weight not found").
//   2. config.json's num_hidden_layers agrees with the model.layers.<i> present.
//   3. Every tensor is read by exactly one linear layer, by the architecture's non-linear
//      modules (embeddings, norms) or is on the ignore list (rotary_emb.inv_freq, FP8 KV-cache
//      scales); the rest are orphans, an error listing them (a layer missing its qweight leaves
//      its scales orphaned).
//   4. Every layer the architecture needs is present (Llama / Mistral / Qwen2 / Qwen3:
//      q/k/v/o, gate/up/down, both norms per decoder layer, embed_tokens, model.norm, lm_head
//      unless tie_word_embeddings; Qwen3 also q_norm/k_norm), and no linear layer is foreign.
//   5. config.json sizes agree with the tensor shapes; the error names the key, its value and
//      the tensor that contradicts it.
// Checkpoints of other architectures get checks 1 and 3 (quantization tensors must belong to a
// layer) only, with one warning.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear {

class Checkpoint;

Status validate_model(const Checkpoint& checkpoint, const QuantConfig& config,
                      const std::vector<LinearLayer>& layers);

// The tensor suffixes a layer of `spec` reads ("qweight", "scales", ..., "bias").
std::vector<std::string_view> layer_tensor_roles(const QuantSpec& spec);

}  // namespace qlinear
