// Tensor-parallel views of canonical weights (docs/architecture.md "Tensor parallelism",
// docs/reference/formats.md §5). One function derives every rank's view from the layer kind, the
// group size and act-order.
#pragma once

#include <string_view>

#include "convert/canonical.h"
#include "core/status.h"

namespace qlinear {

enum class ParallelKind {
  kColumn,  // split N (q/k/v, gate/up, qkv_proj, gate_up_proj, lm_head): outputs concatenate
  kRow,     // split K (o_proj, down_proj): outputs are summed; bias added on rank 0 only
};
std::string_view parallel_kind_name(ParallelKind kind);

// The parallel kind of a (fused or unfused) layer from its name.
ParallelKind parallel_kind_for(std::string_view layer_name);

// Rank `rank`'s view of `weights` under `tp`-way parallelism.
// Column: each fused shard's N is split tp ways (must divide; FP8 blocks must not straddle).
// Row: K is split; K_local must be a multiple of 32/bits; a group that would straddle ranks is an
// error naming the layer, K, the group size and the largest TP size that works; channelwise
// weights keep their [1, N] scales, replicated, with group_size = K_local; act-order keeps the
// full scale/zero table and the global g_idx values of its rows; bias stays on rank 0.
Result<Canonical> shard_canonical(const Canonical& weights, ParallelKind kind, int tp, int rank);

}  // namespace qlinear
