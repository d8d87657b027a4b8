#include "convert/fuse.h"

#include <algorithm>

namespace qlinear {

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

const std::string& shard_name(std::span<const std::string> names, std::size_t i) {
  static const std::string kUnnamed = "<shard>";
  return i < names.size() ? names[i] : kUnnamed;
}

// Bias of the fused layer: concatenated, zeros for shards that have none; empty if none has one.
template <class W>
std::vector<float> concat_bias(const std::vector<W>& shards) {
  const bool any =
      std::any_of(shards.begin(), shards.end(), [](const W& w) { return !w.bias.empty(); });
  std::vector<float> bias;
  if (!any) return bias;
  for (const W& w : shards) {
    if (w.bias.empty()) {
      bias.insert(bias.end(), at(w.N), 0.0f);
    } else {
      bias.insert(bias.end(), w.bias.begin(), w.bias.end());
    }
  }
  return bias;
}

// Appends the columns of `src` ([rows, src_cols]) at column offset `col0` of `dst`
// ([rows, dst_cols]).
template <class T>
void put_columns(std::vector<T>& dst, int64_t dst_cols, const std::vector<T>& src, int64_t src_cols,
                 int64_t rows, int64_t col0) {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(src.begin() + r * src_cols, src_cols, dst.begin() + r * dst_cols + col0);
  }
}

std::string_view fp8_weight_granularity_label(Fp8WeightGranularity g) {
  switch (g) {
    case Fp8WeightGranularity::kTensor:
      return "per-tensor";
    case Fp8WeightGranularity::kChannel:
      return "per-channel";
    case Fp8WeightGranularity::kBlock:
      return "block";
  }
  return "?";
}

Status empty_error(std::string_view layer) {
  return make_error(ErrorCode::kInternal, "{}: a fused layer needs at least one shard", layer);
}

}  // namespace

Result<IntWeights> concat_int(std::vector<IntWeights> shards, std::string_view layer,
                              std::span<const std::string> names) {
  if (shards.empty()) return empty_error(layer);
  if (shards.size() == 1) return std::move(shards[0]);
  const IntWeights& first = shards[0];
  int64_t total_n = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const IntWeights& s = shards[i];
    if (s.bits != first.bits || s.K != first.K || s.group_size != first.group_size ||
        s.num_groups != first.num_groups) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: shard {} has bits={} K={} group_size={}, but shard {} has bits={} "
                        "K={} group_size={}; fused shards must agree",
                        layer, shard_name(names, i), s.bits, s.K, s.group_size,
                        shard_name(names, 0), first.bits, first.K, first.group_size);
    }
    if (s.zeros.empty() != first.zeros.empty()) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: shard {} is {} but shard {} is {}; fused shards must agree", layer,
                        shard_name(names, i), s.zeros.empty() ? "symmetric" : "asymmetric",
                        shard_name(names, 0), first.zeros.empty() ? "symmetric" : "asymmetric");
    }
    if (s.g_idx != first.g_idx) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: the g_idx of shard {} differs from that of shard {}; the shards of a "
                        "fused layer share their input, so their act-order must be identical",
                        layer, shard_name(names, i), shard_name(names, 0));
    }
    total_n += s.N;
  }
  IntWeights out;
  out.bits = first.bits;
  out.K = first.K;
  out.N = total_n;
  out.group_size = first.group_size;
  out.num_groups = first.num_groups;
  out.g_idx = first.g_idx;
  const int64_t word_rows = out.K / out.pack_factor();
  out.qweight.resize(at(word_rows * total_n));
  out.scales.resize(at(out.num_groups * total_n));
  if (!first.zeros.empty()) out.zeros.resize(at(out.num_groups * total_n));
  int64_t col0 = 0;
  for (const IntWeights& s : shards) {
    put_columns(out.qweight, total_n, s.qweight, s.N, word_rows, col0);
    put_columns(out.scales, total_n, s.scales, s.N, out.num_groups, col0);
    if (!s.zeros.empty()) put_columns(out.zeros, total_n, s.zeros, s.N, out.num_groups, col0);
    col0 += s.N;
  }
  out.bias = concat_bias(shards);
  return out;
}

Result<Fp8Weights> concat_fp8(std::vector<Fp8Weights> shards, std::string_view layer,
                              std::span<const std::string> names) {
  if (shards.empty()) return empty_error(layer);
  if (shards.size() == 1) return std::move(shards[0]);
  const Fp8Weights& first = shards[0];
  Fp8Weights out;
  out.K = first.K;
  out.activation = first.activation;
  out.granularity = first.granularity;
  out.block_n = first.block_n;
  out.block_k = first.block_k;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Fp8Weights& s = shards[i];
    if (s.K != first.K || s.is_block() != first.is_block() || s.block_n != first.block_n ||
        s.block_k != first.block_k || s.activation != first.activation) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: shard {} (K={}, {}) disagrees with shard {} (K={}, {}); fused shards "
                        "must share K, scale granularity, block size and activation scheme",
                        layer, shard_name(names, i), s.K,
                        fp8_weight_granularity_label(s.granularity), shard_name(names, 0), first.K,
                        fp8_weight_granularity_label(first.granularity));
    }
    if (s.is_block() && i + 1 < shards.size() && s.N % s.block_n != 0) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: shard {} has N={}, not a multiple of block_n={}; its last scale "
                        "block would straddle the next shard",
                        layer, shard_name(names, i), s.N, s.block_n);
    }
    // Mixed per-tensor and per-channel shards are all per-row now.
    if (s.granularity != out.granularity && !s.is_block()) {
      out.granularity = Fp8WeightGranularity::kChannel;
    }
    out.input_scale = std::max(out.input_scale, s.input_scale);
    out.N += s.N;
    out.qweight.insert(out.qweight.end(), s.qweight.begin(), s.qweight.end());
    out.scale.insert(out.scale.end(), s.scale.begin(), s.scale.end());
  }
  out.bias = concat_bias(shards);
  return out;
}

Result<DenseWeights> concat_dense(std::vector<DenseWeights> shards, std::string_view layer,
                                  std::span<const std::string> names) {
  if (shards.empty()) return empty_error(layer);
  if (shards.size() == 1) return std::move(shards[0]);
  const DenseWeights& first = shards[0];
  DenseWeights out;
  out.K = first.K;
  out.dtype = first.dtype;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const DenseWeights& s = shards[i];
    if (s.K != first.K || s.dtype != first.dtype) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: shard {} is [N={}, K={}] {}, shard {} has K={} {}; fused shards must "
                        "share K and dtype",
                        layer, shard_name(names, i), s.N, s.K, dtype_name(s.dtype),
                        shard_name(names, 0), first.K, dtype_name(first.dtype));
    }
    out.N += s.N;
    out.data.insert(out.data.end(), s.data.begin(), s.data.end());
  }
  out.bias = concat_bias(shards);
  return out;
}

}  // namespace qlinear
