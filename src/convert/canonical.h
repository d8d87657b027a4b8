// The canonical weight forms: the ONE contract every kernel starts from
// (docs/architecture.md "Canonical weights"). Every checkpoint format is converted into one of
// these at load time, losslessly; kernels never see checkpoint layouts.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "qlinear/dtype.h"
#include "quant/quant_spec.h"

namespace qlinear {

// Integer weights (AWQ, GPTQ, AutoRound, compressed-tensors pack-quantized).
struct IntWeights {
  int bits = 4;            // 2, 4 or 8
  int64_t K = 0;           // in_features of this shard
  int64_t N = 0;           // out_features of this shard
  int group_size = 0;      // > 0; channelwise is K (never -1 here)
  int64_t num_groups = 0;  // rows of scales/zeros: K/group_size, or the g_idx table size
  // [K*bits/32, N], row-major: word (r, n) holds codes of rows r*pf .. r*pf+pf-1 of column n,
  // code i of the word at bit offset bits*i (GPTQ order). Codes unsigned in [0, 2^bits).
  std::vector<uint32_t> qweight;
  std::vector<float> scales;   // [num_groups, N]
  std::vector<uint8_t> zeros;  // [num_groups, N] true zero points; empty = symmetric 2^(bits-1)
  std::vector<int32_t> g_idx;  // [K] group of each input row; empty = row k in group k/group_size
  std::vector<float> bias;     // [N] or empty

  int pack_factor() const { return 32 / bits; }
  uint32_t code(int64_t k, int64_t n) const;
  int64_t group_of(int64_t k) const;
  uint32_t zero(int64_t group, int64_t n) const;  // 2^(bits-1) when symmetric
  float dequant(int64_t k, int64_t n) const;      // (code - zero) * scale
};

// FP8 e4m3fn weights (compressed-tensors float-quantized, quant_method fp8, online FP8).
struct Fp8Weights {
  int64_t K = 0;
  int64_t N = 0;
  std::vector<uint8_t> qweight;  // [N, K] e4m3fn, checkpoint order
  // kTensor and kChannel are both stored per row: `scale` has N entries (a per-tensor scale, one
  // per fused shard, is expanded to its rows: lossless, never requantized). kBlock: `scale` is
  // [ceil(N/block_n), ceil(K/block_k)].
  Fp8WeightGranularity granularity = Fp8WeightGranularity::kChannel;  // as in the checkpoint
  int block_n = 0;
  int block_k = 0;
  std::vector<float> scale;
  ActQuant activation = ActQuant::kNone;  // as the checkpoint asks; the selector decides the mode
  float input_scale = 0.0f;               // kStaticTensor only (max over fused shards)
  std::vector<float> bias;

  bool is_block() const { return granularity == Fp8WeightGranularity::kBlock; }
  float weight_scale(int64_t n, int64_t k) const;
  float dequant(int64_t n, int64_t k) const;
};

// Unquantized (skipped) layers: [N, K] row-major in f32, bf16 or f16, as stored.
struct DenseWeights {
  int64_t K = 0;
  int64_t N = 0;
  DType dtype = DType::kBF16;
  std::vector<std::byte> data;  // N*K*dtype_size(dtype) bytes
  std::vector<float> bias;

  float at(int64_t n, int64_t k) const;
};

struct Canonical {
  std::string name;  // the (fused) layer name
  std::variant<IntWeights, Fp8Weights, DenseWeights> weights;
  // N extents of the fused shards in order (q, k, v); {N} for an unfused layer. Column-parallel
  // sharding splits each of them.
  std::vector<int64_t> shard_sizes;

  int64_t K() const;
  int64_t N() const;
  // Weight W[n][k] as float (for tests and the reference kernel).
  float dequant(int64_t n, int64_t k) const;
  // "int4 g128 asym act-order", "fp8 channel dyn-token", "dense bf16"
  std::string describe() const;
};

}  // namespace qlinear
