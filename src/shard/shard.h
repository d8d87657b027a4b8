// Tensor-parallel views of canonical weights (docs/architecture.md "Tensor parallelism",
// docs/reference/formats.md §5). One function derives every rank's view from the layer kind, the
// group size and act-order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// Output columns of one fused shard inside a rank's N.
struct ColumnWindow {
  int64_t begin = 0;
  int64_t size = 0;
};

// Rank `rank`'s part of a layer for ANY tp: the nominal split is even (row-parallel: K / tp rows
// each; column-parallel: each fused shard's N / tp columns), and where a quantization group or an
// FP8 scale block straddles two ranks, each of them takes it whole, with the rows outside its
// own slice set to exact zeros (int codes equal to their zero point, FP8 code 0), so the sum of
// the ranks is exactly the unsharded result (vLLM refuses such splits).
struct ShardPlan {
  Canonical weights;
  // Row-parallel: the rank's rows of K are [k_begin, k_end); `weights` cover
  // [k_begin - pad_front, k_end + pad_back) and expect zeros in the activations of the padding.
  int64_t k_begin = 0;
  int64_t k_end = 0;
  int64_t pad_front = 0;
  int64_t pad_back = 0;
  // Column-parallel: per fused shard, where the rank's own outputs lie in `weights`' N (the rest
  // are padding outputs to ignore). Row-parallel: one window, all of N.
  std::vector<ColumnWindow> windows;
  // Where padding happened and what it costs, for `explain --tp`; "" when the split is exact.
  std::string padding;
};
Result<ShardPlan> plan_shard(const Canonical& weights, ParallelKind kind, int tp, int rank);

}  // namespace qlinear
