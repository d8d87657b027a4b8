// Canonical accessors against scalar formulas, describe(), dense conversion and fusing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "convert/canonical.h"
#include "convert/dense_convert.h"
#include "convert/fuse.h"
#include "test_tensors.h"

namespace qlinear {
namespace {

using ::testing::HasSubstr;
using testing::raw;

IntWeights small_int(int64_t n, uint32_t seed, bool asym) {
  IntWeights w;
  w.bits = 4;
  w.K = 16;
  w.N = n;
  w.group_size = 8;
  w.num_groups = 2;
  const auto codes = testing::random_codes(16, n, 0, 15, seed);
  w.qweight = testing::as_words(testing::pack_along_rows(codes, 16, n, 4));
  w.scales = testing::random_scales(2 * n, seed + 1);
  if (asym) {
    for (auto z : testing::random_codes(2, n, 0, 15, seed + 2)) {
      w.zeros.push_back(static_cast<uint8_t>(z));
    }
  }
  return w;
}

TEST(Canonical, IntAccessorsFollowTheGptqLayout) {
  IntWeights w;
  w.bits = 4;
  w.K = 8;
  w.N = 2;
  w.group_size = 4;
  w.num_groups = 2;
  w.qweight = {0x76543210u, 0xFEDCBA98u};  // column 0: codes 0..7, column 1: 8..15
  w.scales = {1.0f, 2.0f, 0.5f, 0.25f};
  w.zeros = {1, 2, 3, 4};
  for (int64_t k = 0; k < 8; ++k) {
    EXPECT_EQ(w.code(k, 0), static_cast<uint32_t>(k));
    EXPECT_EQ(w.code(k, 1), static_cast<uint32_t>(k + 8));
  }
  EXPECT_EQ(w.dequant(5, 1), (13.0f - 4.0f) * 0.25f);
  EXPECT_EQ(w.dequant(2, 0), (2.0f - 1.0f) * 1.0f);
  w.zeros.clear();
  EXPECT_EQ(w.dequant(5, 1), (13.0f - 8.0f) * 0.25f);
  w.g_idx = {1, 1, 1, 1, 0, 0, 0, 0};
  EXPECT_EQ(w.dequant(5, 1), (13.0f - 8.0f) * 2.0f);
}

TEST(Canonical, Describe) {
  Canonical c{"layer", small_int(8, 1, true), {8}};
  EXPECT_EQ(c.describe(), "int4 g8 asym");
  std::get<IntWeights>(c.weights).g_idx = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(c.describe(), "int4 g8 asym act-order");
  Fp8Weights f;
  f.activation = ActQuant::kDynamicToken;
  EXPECT_EQ((Canonical{"l", f, {0}}.describe()), "fp8 channel dyn-token");
  f.granularity = Fp8WeightGranularity::kBlock;
  f.block_n = f.block_k = 128;
  f.activation = ActQuant::kDynamicGroup;
  EXPECT_EQ((Canonical{"l", f, {0}}.describe()), "fp8 block128x128 dyn-group");
  DenseWeights d;
  d.dtype = DType::kF16;
  EXPECT_EQ((Canonical{"l", d, {0}}.describe()), "dense f16");
}

TEST(Dense, KeepsBytesAndReadsBias) {
  std::vector<uint16_t> w(6);
  for (int i = 0; i < 6; ++i) w[static_cast<std::size_t>(i)] = f32_to_bf16(0.5f * i - 1.0f);
  std::vector<float> bias = {1.0f, -2.0f};
  auto d = convert_dense(DenseTensors{raw("m.weight", DType::kBF16, {2, 3}, w),
                                      raw("m.bias", DType::kF32, {2}, bias)});
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->N, 2);
  EXPECT_EQ(d->K, 3);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t k = 0; k < 3; ++k)
      EXPECT_EQ(d->at(n, k), 0.5f * static_cast<float>(n * 3 + k) - 1.0f);
  }
  EXPECT_EQ(d->bias, bias);
  std::vector<int32_t> ints(6, 0);
  auto bad = convert_dense(DenseTensors{raw("m.weight", DType::kI32, {2, 3}, ints)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"m.weight\" has dtype I32"));
}

TEST(FuseInt, ColumnsConcatenateAndBiasFillsZeros) {
  std::vector<IntWeights> shards = {small_int(8, 10, true), small_int(16, 20, true),
                                    small_int(8, 30, true)};
  shards[1].bias.assign(16, 3.0f);
  const std::vector<std::string> names = {"q", "k", "v"};
  auto fused = concat_int(shards, "qkv", names);
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  EXPECT_EQ(fused->N, 32);
  int64_t col = 0;
  for (const IntWeights& s : shards) {
    for (int64_t n = 0; n < s.N; ++n, ++col) {
      for (int64_t k = 0; k < 16; ++k) {
        ASSERT_EQ(fused->code(k, col), s.code(k, n));
        ASSERT_EQ(fused->dequant(k, col), s.dequant(k, n));
      }
      EXPECT_EQ(fused->bias[static_cast<std::size_t>(col)], s.bias.empty() ? 0.0f : 3.0f);
    }
  }
}

TEST(FuseInt, GIdxMustBeIdentical) {
  std::vector<IntWeights> shards = {small_int(8, 10, false), small_int(8, 20, false)};
  shards[0].g_idx = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  shards[1].g_idx = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  const std::vector<std::string> names = {"gate_proj", "up_proj"};
  auto fused = concat_int(shards, "gate_up_proj", names);
  ASSERT_FALSE(fused.ok());
  EXPECT_THAT(fused.status().message(), HasSubstr("gate_up_proj: the g_idx of shard up_proj"));
}

TEST(FuseDense, RowsConcatenate) {
  DenseWeights a, b;
  a.K = b.K = 2;
  a.N = 1;
  b.N = 2;
  a.dtype = b.dtype = DType::kF32;
  const std::vector<float> va = {1, 2}, vb = {3, 4, 5, 6};
  a.data.assign(std::as_bytes(std::span(va)).begin(), std::as_bytes(std::span(va)).end());
  b.data.assign(std::as_bytes(std::span(vb)).begin(), std::as_bytes(std::span(vb)).end());
  const std::vector<std::string> names = {"a", "b"};
  auto fused = concat_dense({a, b}, "ab", names);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->at(2, 1), 6.0f);
  EXPECT_EQ(fused->at(0, 1), 2.0f);
  b.dtype = DType::kBF16;
  EXPECT_FALSE(concat_dense({a, b}, "ab", names).ok());
}

}  // namespace
}  // namespace qlinear
