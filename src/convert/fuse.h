// Concatenation of converted shards of a fused layer (qkv_proj <- q/k/v, gate_up_proj <-
// gate/up) along N. Shards are converted one by one first, so every per-shard rule still applies;
// these functions check what must agree across shards.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"

namespace qlinear {

// Columns of qweight, scales and zeros concatenate; bits, K, group_size and g_idx must agree.
// A shard without a bias contributes zeros when another shard has one.
Result<IntWeights> concat_int(std::vector<IntWeights> shards, std::string_view layer,
                              std::span<const std::string> shard_names);
// Per-row scales concatenate (per-tensor scales were already expanded per row); block scales
// concatenate their rows, so every shard but the last must have N % block_n == 0. A static
// input_scale becomes the max over the shards (they all read the same input, formats.md §4.5).
Result<Fp8Weights> concat_fp8(std::vector<Fp8Weights> shards, std::string_view layer,
                              std::span<const std::string> shard_names);
// Rows concatenate; dtype and K must agree.
Result<DenseWeights> concat_dense(std::vector<DenseWeights> shards, std::string_view layer,
                                  std::span<const std::string> shard_names);

}  // namespace qlinear
