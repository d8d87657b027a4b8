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
};

// Finds every linear layer (a prefix P with P.qweight, P.weight_packed, or a 2-D P.weight, other
// than embeddings), fuses q/k/v and gate/up when all shards exist, resolves each shard with
// `config`, and checks that the shards of a fused layer agree: all skipped or all quantized
// alike, else an error naming the fused layer and the disagreeing shard.
Result<std::vector<LinearLayer>> plan_linear_layers(const Checkpoint& checkpoint,
                                                    const QuantConfig& config);

}  // namespace qlinear
