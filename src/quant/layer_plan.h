// The linear layers of a checkpoint, fused as the runner runs them (qkv_proj <- q/k/v,
// gate_up_proj <- gate/up), each with the QuantSpec of every shard.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "quant/quant_spec.h"

namespace qlinear {

class Checkpoint;

struct LinearLayer {
  std::string name;                 // fused name: "model.layers.0.self_attn.qkv_proj"
  std::vector<std::string> shards;  // unfused names in N order; {name} when not fused
  std::vector<QuantSpec> specs;     // one per shard; agree with each other (checked)
  // Set on the shards of a would-be fused layer that run alone: why they could not be fused
  // ("k_proj is bits=8 ... but q_proj is bits=4 ..."). Fusion is an optimisation, never a failure.
  std::string unfused_reason;
};

// Finds every linear layer (a prefix P with P.qweight, P.weight_packed, or a 2-D P.weight, other
// than embeddings), fuses q/k/v and gate/up when all shards exist, and resolves each shard with
// `config`. Shards that are not quantized alike (AutoRound's extra_config giving k_proj 8 bits,
// a skip list naming one of them) become separate layers with unfused_reason saying why. Then
// validates the model as a whole (quant/validate_model.h: orphan tensors, missing layers, config
// sizes that contradict the tensors), so every caller gets those checks.
Result<std::vector<LinearLayer>> plan_linear_layers(const Checkpoint& checkpoint,
                                                    const QuantConfig& config);

// The steps of plan_linear_layers, exposed for tests and tools:
// The unfused linear layer names of a checkpoint (sorted by name).
std::vector<std::string> find_linear_layer_names(const Checkpoint& checkpoint);
// Fuses q/k/v -> qkv_proj and gate/up -> gate_up_proj where every shard is present; returns the
// layers in natural order (layers.2 before layers.10) with `specs` empty.
std::vector<LinearLayer> group_linear_layers(const std::vector<std::string>& layer_names);
// Fills layer->specs: a fused name matched by an explicit skip entry skips every shard;
// otherwise each shard is resolved, and shards that disagree (skipped vs quantized, or
// different schemes) are a kMisconfigured error naming the fused layer and both shards.
Status resolve_linear_layer(const QuantConfig& config, LinearLayer* layer);
// Why the resolved shards of `layer` cannot share one fused kernel call, or "" when they can.
std::string shard_disagreement(const LinearLayer& layer);

}  // namespace qlinear
