// Tensor-parallel emulation: every rank's view, dequantized, must reproduce the unsharded matrix
// (column: concatenated per fused shard; row: column slices, and the summed partial products
// equal the full product).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>

#include "shard/shard.h"

namespace qlinear {
namespace {

using ::testing::HasSubstr;

std::vector<float> uniform(std::size_t count, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct IntOptions {
  int bits = 4;
  int64_t k = 256;
  int group = 32;  // == k: channelwise
  bool zeros = true;
  bool act_order = false;
  std::vector<int64_t> shard_sizes = {32, 16, 16};
  bool bias = true;
};

Canonical random_int(const IntOptions& o, uint32_t seed) {
  IntWeights w;
  w.bits = o.bits;
  w.K = o.k;
  for (int64_t s : o.shard_sizes) w.N += s;
  w.group_size = o.group;
  w.num_groups = o.k / o.group;
  std::mt19937 rng(seed);
  // Any uint32 is a valid word of codes.
  w.qweight.resize(static_cast<std::size_t>(o.k / (32 / o.bits) * w.N));
  for (auto& x : w.qweight) x = static_cast<uint32_t>(rng());
  w.scales = uniform(static_cast<std::size_t>(w.num_groups * w.N), 0.01f, 0.1f, seed + 1);
  if (o.zeros) {
    w.zeros.resize(w.scales.size());
    for (auto& z : w.zeros) z = static_cast<uint8_t>(rng() % (1u << o.bits));
  }
  if (o.act_order) {
    for (int64_t k = 0; k < o.k; ++k) w.g_idx.push_back(static_cast<int32_t>(k / o.group));
    std::shuffle(w.g_idx.begin(), w.g_idx.end(), rng);
  }
  if (o.bias) w.bias = uniform(static_cast<std::size_t>(w.N), -1.0f, 1.0f, seed + 2);
  return Canonical{"model.layers.0.mlp.layer", w, o.shard_sizes};
}

Canonical random_fp8(bool block, std::vector<int64_t> sizes, int64_t k, uint32_t seed) {
  Fp8Weights w;
  w.K = k;
  for (int64_t s : sizes) w.N += s;
  std::mt19937 rng(seed);
  w.qweight.resize(static_cast<std::size_t>(w.N * k));
  for (auto& q : w.qweight) {
    do {
      q = static_cast<uint8_t>(rng());
    } while ((q & 0x7F) == 0x7F);
  }
  if (block) {
    w.granularity = Fp8WeightGranularity::kBlock;
    w.block_n = 8;
    w.block_k = 16;
    w.scale = uniform(static_cast<std::size_t>(((w.N + 7) / 8) * ((k + 15) / 16)), 0.001f, 0.01f,
                      seed + 1);
  } else {
    w.scale = uniform(static_cast<std::size_t>(w.N), 0.001f, 0.01f, seed + 1);
  }
  w.bias = uniform(static_cast<std::size_t>(w.N), -1.0f, 1.0f, seed + 2);
  return Canonical{"model.layers.0.self_attn.layer", w, sizes};
}

Canonical random_dense(std::vector<int64_t> sizes, int64_t k, uint32_t seed) {
  DenseWeights w;
  w.K = k;
  for (int64_t s : sizes) w.N += s;
  w.dtype = DType::kBF16;
  std::vector<uint16_t> v(static_cast<std::size_t>(w.N * k));
  const auto f = uniform(v.size(), -1.0f, 1.0f, seed);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = f32_to_bf16(f[i]);
  const auto bytes = std::as_bytes(std::span<const uint16_t>(v));
  w.data.assign(bytes.begin(), bytes.end());
  w.bias = uniform(static_cast<std::size_t>(w.N), -1.0f, 1.0f, seed + 1);
  return Canonical{"model.layers.0.mlp.layer", w, sizes};
}

const std::vector<float>& bias_of(const Canonical& c) {
  return std::visit([](const auto& w) -> const std::vector<float>& { return w.bias; }, c.weights);
}

// Column: concatenating every rank's slice of each fused shard reproduces the full matrix.
void check_column(const Canonical& full, int tp) {
  const int64_t k = full.K();
  std::vector<Canonical> ranks;
  for (int r = 0; r < tp; ++r) {
    auto s = shard_canonical(full, ParallelKind::kColumn, tp, r);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_EQ(s->K(), k);
    ranks.push_back(*s);
  }
  int64_t offset = 0;
  for (std::size_t i = 0; i < full.shard_sizes.size(); ++i) {
    const int64_t local = full.shard_sizes[i] / tp;
    for (int r = 0; r < tp; ++r) {
      const Canonical& c = ranks[static_cast<std::size_t>(r)];
      ASSERT_EQ(c.shard_sizes[i], local);
      int64_t local_offset = 0;
      for (std::size_t j = 0; j < i; ++j) local_offset += c.shard_sizes[j];
      for (int64_t n = 0; n < local; ++n) {
        const int64_t global_n = offset + r * local + n;
        for (int64_t kk = 0; kk < k; ++kk) {
          ASSERT_EQ(c.dequant(local_offset + n, kk), full.dequant(global_n, kk))
              << "tp=" << tp << " rank=" << r << " shard=" << i << " n=" << n << " k=" << kk;
        }
        if (!bias_of(full).empty()) {
          ASSERT_EQ(bias_of(c)[static_cast<std::size_t>(local_offset + n)],
                    bias_of(full)[static_cast<std::size_t>(global_n)]);
        }
      }
    }
    offset += full.shard_sizes[i];
  }
}

// Row: rank r's [N, K_local] equals columns [r*K_local, (r+1)*K_local) of the full matrix, and
// the sum over ranks of x_r . W_r^T (+ bias on rank 0) equals x . W^T (+ bias).
void check_row(const Canonical& full, int tp) {
  const int64_t n_total = full.N();
  const int64_t k = full.K();
  const int64_t k_local = k / tp;
  const auto x = uniform(static_cast<std::size_t>(k), -1.0f, 1.0f, 99);
  std::vector<double> y_full(static_cast<std::size_t>(n_total), 0.0);
  std::vector<double> y_sum(static_cast<std::size_t>(n_total), 0.0);
  for (int64_t n = 0; n < n_total; ++n) {
    for (int64_t kk = 0; kk < k; ++kk) {
      y_full[static_cast<std::size_t>(n)] +=
          static_cast<double>(full.dequant(n, kk)) * x[static_cast<std::size_t>(kk)];
    }
    if (!bias_of(full).empty())
      y_full[static_cast<std::size_t>(n)] += bias_of(full)[static_cast<std::size_t>(n)];
  }
  for (int r = 0; r < tp; ++r) {
    auto s = shard_canonical(full, ParallelKind::kRow, tp, r);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_EQ(s->K(), k_local);
    ASSERT_EQ(s->N(), n_total);
    ASSERT_EQ(s->shard_sizes, full.shard_sizes);
    ASSERT_EQ(bias_of(*s).empty(), r != 0 || bias_of(full).empty());
    for (int64_t n = 0; n < n_total; ++n) {
      for (int64_t kk = 0; kk < k_local; ++kk) {
        const float v = s->dequant(n, kk);
        ASSERT_EQ(v, full.dequant(n, r * k_local + kk))
            << "tp=" << tp << " rank=" << r << " n=" << n << " k=" << kk;
        y_sum[static_cast<std::size_t>(n)] +=
            static_cast<double>(v) * x[static_cast<std::size_t>(r * k_local + kk)];
      }
      if (!bias_of(*s).empty())
        y_sum[static_cast<std::size_t>(n)] += bias_of(*s)[static_cast<std::size_t>(n)];
    }
  }
  for (int64_t n = 0; n < n_total; ++n) {
    const double a = y_full[static_cast<std::size_t>(n)];
    ASSERT_NEAR(y_sum[static_cast<std::size_t>(n)], a, 1e-9 * (1.0 + std::fabs(a))) << n;
  }
}

void check_all_tp(const Canonical& c) {
  for (int tp : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << c.describe() << " tp=" << tp);
    check_column(c, tp);
    check_row(c, tp);
  }
}

TEST(ShardInt, GroupedAsymmetric) { check_all_tp(random_int(IntOptions{}, 1)); }

TEST(ShardInt, GroupedSymmetric8Bit) {
  IntOptions o;
  o.bits = 8;
  o.zeros = false;
  o.group = 64;
  check_all_tp(random_int(o, 2));
}

TEST(ShardInt, ActOrder) {
  IntOptions o;
  o.act_order = true;
  o.group = 64;  // 4 groups, rows of every group spread over all ranks
  const Canonical c = random_int(o, 3);
  check_all_tp(c);
  auto r1 = shard_canonical(c, ParallelKind::kRow, 4, 1);
  ASSERT_TRUE(r1.ok());
  const auto& w = std::get<IntWeights>(r1->weights);
  const auto& full = std::get<IntWeights>(c.weights);
  EXPECT_EQ(w.num_groups, full.num_groups);
  EXPECT_EQ(w.scales, full.scales);
  EXPECT_EQ(w.zeros, full.zeros);
  EXPECT_EQ(w.g_idx, std::vector<int32_t>(full.g_idx.begin() + 64, full.g_idx.begin() + 128));
}

TEST(ShardInt, ChannelwiseRowKeepsScalesAndUsesLocalGroup) {
  IntOptions o;
  o.group = 256;
  const Canonical c = random_int(o, 4);
  check_all_tp(c);
  auto r = shard_canonical(c, ParallelKind::kRow, 4, 3);
  ASSERT_TRUE(r.ok());
  const auto& w = std::get<IntWeights>(r->weights);
  EXPECT_EQ(w.group_size, 64);
  EXPECT_EQ(w.num_groups, 1);
  EXPECT_EQ(w.scales, std::get<IntWeights>(c.weights).scales);
}

TEST(ShardInt, TwoBitManyGroups) {
  IntOptions o;
  o.bits = 2;
  o.group = 16;
  o.shard_sizes = {8, 8};
  check_all_tp(random_int(o, 5));
}

TEST(ShardInt, StraddlingGroupNamesLayerSizesAndAWorkingTp) {
  IntOptions o;
  o.k = 192;  // 6 groups of 32: tp=4 gives K_local=48, tp=3 gives 64
  const Canonical c = random_int(o, 6);
  auto r = shard_canonical(c, ParallelKind::kRow, 4, 0);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_THAT(m, HasSubstr("model.layers.0.mlp.layer"));
  EXPECT_THAT(m, HasSubstr("K=192"));
  EXPECT_THAT(m, HasSubstr("K_local=48"));
  EXPECT_THAT(m, HasSubstr("group_size=32"));
  EXPECT_THAT(m, HasSubstr("tp=3 works"));
  auto ok = shard_canonical(c, ParallelKind::kRow, 3, 2);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(ShardInt, NonDivisibleNIsAnError) {
  IntOptions o;
  o.shard_sizes = {24, 6};  // 6 % 4 != 0; both split 3 ways
  const Canonical c = random_int(o, 7);
  auto r = shard_canonical(c, ParallelKind::kColumn, 4, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("fused shard 1 of N=6"));
  EXPECT_THAT(r.status().message(), HasSubstr("tp=4"));
  EXPECT_THAT(r.status().message(), HasSubstr("tp=3 works"));
}

TEST(ShardFp8, Channel) { check_all_tp(random_fp8(false, {16, 8, 8}, 64, 8)); }

TEST(ShardFp8, Block) { check_all_tp(random_fp8(true, {64, 32}, 128, 9)); }

TEST(ShardFp8, BlockStraddleErrors) {
  const Canonical c = random_fp8(true, {32, 16}, 64, 10);
  auto col = shard_canonical(c, ParallelKind::kColumn, 4, 0);  // 16/4 = 4, not a multiple of 8
  ASSERT_FALSE(col.ok());
  EXPECT_THAT(col.status().message(), HasSubstr("block_n=8"));
  auto row = shard_canonical(c, ParallelKind::kRow, 8, 0);  // K_local = 8, block_k = 16
  ASSERT_FALSE(row.ok());
  EXPECT_THAT(row.status().message(), HasSubstr("block_k=16"));
  EXPECT_THAT(row.status().message(), HasSubstr("tp=4 works"));
}

TEST(ShardDense, ColumnsAndRows) { check_all_tp(random_dense({16, 8}, 32, 11)); }

TEST(ShardRank, OutOfRangeIsAnError) {
  const Canonical c = random_dense({8}, 8, 12);
  EXPECT_FALSE(shard_canonical(c, ParallelKind::kRow, 2, 2).ok());
  EXPECT_FALSE(shard_canonical(c, ParallelKind::kRow, 0, 0).ok());
}

TEST(ParallelKind, FromName) {
  EXPECT_EQ(parallel_kind_for("model.layers.0.self_attn.o_proj"), ParallelKind::kRow);
  EXPECT_EQ(parallel_kind_for("model.layers.0.mlp.down_proj"), ParallelKind::kRow);
  EXPECT_EQ(parallel_kind_for("model.layers.0.attn.out_proj"), ParallelKind::kRow);
  EXPECT_EQ(parallel_kind_for("model.layers.0.self_attn.qkv_proj"), ParallelKind::kColumn);
  EXPECT_EQ(parallel_kind_for("model.layers.0.mlp.gate_up_proj"), ParallelKind::kColumn);
  EXPECT_EQ(parallel_kind_for("model.layers.0.mlp.up_proj"), ParallelKind::kColumn);
  EXPECT_EQ(parallel_kind_for("lm_head"), ParallelKind::kColumn);
  EXPECT_EQ(parallel_kind_name(ParallelKind::kRow), "row");
}

}  // namespace
}  // namespace qlinear
