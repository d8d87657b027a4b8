// Checkpoint tensors -> canonical weights, per (fused) layer. Lossless and bit-exact; every
// check of formats.md runs here: shapes against (K, N, bits, group), symmetric zeros verified
// (v1: all 2^(b-1)-1, v2: all 2^(b-1); anything else is a mis-tagged checkpoint), g_idx validated
// (values in range, every group exactly group_size members) and dropped when trivial, group -1
// normalised to K, FP8 scales of any float dtype and shape [], [1], [N], [N,1] or blocks
// normalised to fp32, NaN / infinite / zero / negative scales rejected with the tensor named.
#pragma once

#include <string>
#include <vector>
#include "convert/canonical.h"
#include "core/status.h"

#include "quant/layer_plan.h"

namespace qlinear {

class Checkpoint;

// Loads and converts one layer (all its fused shards, concatenated along N).
Result<Canonical> load_canonical(const Checkpoint& checkpoint, const LinearLayer& layer);

// A layer as it runs: one fused canonical form, or -- when its shards convert fine but cannot
// share one (act-order tables that differ, an FP8 block that would straddle two shards) -- each
// shard alone, with the reason. Fusion is an optimisation, never a failure.
struct LoadedLayer {
  std::vector<Canonical> parts;  // {fused}, or one per shard in N order
  std::string unfused_reason;    // "" when fused
};
Result<LoadedLayer> load_layer(const Checkpoint& checkpoint, const LinearLayer& layer);

}  // namespace qlinear
