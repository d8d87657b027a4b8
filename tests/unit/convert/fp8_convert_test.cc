// FP8 conversions: every scale shape and dtype of formats.md §3, rejected scales, fused shards
// (per-tensor scales expanded per row, never requantized; input_scale = max), online FP8.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convert/fp8_convert.h"
#include "convert/fuse.h"
#include "test_tensors.h"

namespace qlinear {
namespace {

using ::testing::HasSubstr;
using testing::raw;

std::vector<uint8_t> random_fp8(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<uint8_t> out(static_cast<std::size_t>(count));
  for (auto& b : out) {
    do {
      b = static_cast<uint8_t>(dist(rng));
    } while ((b & 0x7F) == 0x7F);  // no NaN codes
  }
  return out;
}

Fp8Spec channel_spec(ActQuant act = ActQuant::kDynamicToken) {
  Fp8Spec s;
  s.weight = Fp8WeightGranularity::kChannel;
  s.activation = act;
  return s;
}

constexpr int64_t kN = 6;
constexpr int64_t kK = 10;

struct Fp8Layer {
  std::vector<uint8_t> q = random_fp8(kN * kK, 3);
};

// Stores `values` in `dtype` and returns what the stored values widen to.
template <class Fn>
void for_each_scale_dtype(const std::vector<float>& values, Fn&& fn) {
  { fn(DType::kF32, values, std::as_bytes(std::span<const float>(values))); }
  for (DType dt : {DType::kBF16, DType::kF16}) {
    std::vector<uint16_t> bits(values.size());
    std::vector<float> widened(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = dt == DType::kBF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
      widened[i] = dt == DType::kBF16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
    }
    fn(dt, widened, std::as_bytes(std::span<const uint16_t>(bits)));
  }
}

TEST(Fp8Scales, EveryAcceptedShapeAndDtype) {
  Fp8Layer l;
  struct Case {
    Shape shape;
    std::vector<float> values;
    Fp8WeightGranularity granularity;
  };
  const std::vector<Case> cases = {
      {{}, {0.5f}, Fp8WeightGranularity::kTensor},
      {{1}, {0.75f}, Fp8WeightGranularity::kTensor},
      {{kN}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, Fp8WeightGranularity::kChannel},
      {{kN, 1}, {1.5f, 2.5f, 0.125f, 3.0f, 0.01f, 7.0f}, Fp8WeightGranularity::kChannel},
  };
  for (const Case& c : cases) {
    for_each_scale_dtype(c.values, [&](DType dt, const std::vector<float>& widened,
                                       std::span<const std::byte> bytes) {
      Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {kN, kK}, l.q),
                   RawTensor{"m.weight_scale", dt, c.shape, bytes}};
      auto w = convert_fp8(channel_spec(), t);
      ASSERT_TRUE(w.ok()) << w.status().to_string();
      EXPECT_EQ(w->granularity, c.granularity);
      EXPECT_EQ(w->qweight, l.q);
      ASSERT_EQ(w->scale.size(), static_cast<std::size_t>(kN));
      for (int64_t n = 0; n < kN; ++n) {
        const float s = widened.size() == 1 ? widened[0] : widened[static_cast<std::size_t>(n)];
        for (int64_t k = 0; k < kK; ++k) {
          ASSERT_EQ(w->dequant(n, k), f8e4m3_to_f32(l.q[static_cast<std::size_t>(n * kK + k)]) * s);
        }
      }
    });
  }
}

TEST(Fp8Scales, BlockScalesWithRaggedEdges) {
  // N = 6, K = 10 with 4x4 blocks: scales [2, 3].
  Fp8Layer l;
  std::vector<float> s = {0.5f, 1.0f, 2.0f, 4.0f, 8.0f, 16.0f};
  Fp8Spec spec;
  spec.weight = Fp8WeightGranularity::kBlock;
  spec.block_n = 4;
  spec.block_k = 4;
  spec.activation = ActQuant::kDynamicGroup;
  spec.scale_name = "weight_scale_inv";
  Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {kN, kK}, l.q),
               raw("m.weight_scale_inv", DType::kF32, {2, 3}, s)};
  auto w = convert_fp8(spec, t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_TRUE(w->is_block());
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t k = 0; k < kK; ++k) {
      const float scale = s[static_cast<std::size_t>((n / 4) * 3 + k / 4)];  // a multiplier
      ASSERT_EQ(w->dequant(n, k), f8e4m3_to_f32(l.q[static_cast<std::size_t>(n * kK + k)]) * scale);
    }
  }
  t.scale = raw("m.weight_scale_inv", DType::kF32, {3, 2}, s);
  auto bad = convert_fp8(spec, t);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"m.weight_scale_inv\" has shape [3, 2]"));
  EXPECT_THAT(bad.status().message(), HasSubstr("[ceil(N/4)=2, ceil(K/4)=3]"));
}

TEST(Fp8Scales, OtherShapesAreRejectedWithTheAcceptedOnes) {
  Fp8Layer l;
  std::vector<float> s(kN * 2, 1.0f);
  Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {kN, kK}, l.q),
               raw("m.weight_scale", DType::kF32, {kN, 2}, s)};
  auto w = convert_fp8(channel_spec(), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.weight_scale\" has shape [6, 2]"));
  EXPECT_THAT(w.status().message(), HasSubstr("[] or [1] (per-tensor), [N=6] or [N=6, 1]"));
}

TEST(Fp8Scales, NonPositiveOrNonFiniteScalesAreRejected) {
  Fp8Layer l;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity(), 0.0f, -1.0f}) {
    std::vector<float> s(kN, 1.0f);
    s[4] = bad;
    Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {kN, kK}, l.q),
                 raw("m.weight_scale", DType::kF32, {kN, 1}, s)};
    auto w = convert_fp8(channel_spec(), t);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_EQ(w.status().code(), ErrorCode::kCorrupt);
    EXPECT_THAT(w.status().message(),
                HasSubstr(fmt::format("\"m.weight_scale\" element [4, 0] is {}", bad)));
  }
}

TEST(Fp8Weight, OnlyE4M3IsAccepted) {
  Fp8Layer l;
  std::vector<float> s = {1.0f};
  Fp8Tensors t{raw("m.weight", DType::kU8, {kN, kK}, l.q),
               raw("m.weight_scale", DType::kF32, {}, s)};
  auto w = convert_fp8(channel_spec(), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.weight\" has dtype U8"));
  EXPECT_THAT(w.status().message(), HasSubstr("F8_E4M3"));
}

TEST(Fp8Static, InputScaleIsRequiredAndRead) {
  Fp8Layer l;
  std::vector<float> s = {1.0f};
  std::vector<uint16_t> in = {f32_to_bf16(0.0625f)};
  Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {kN, kK}, l.q),
               raw("m.weight_scale", DType::kF32, {}, s)};
  auto missing = convert_fp8(channel_spec(ActQuant::kStaticTensor), t);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("input_scale"));
  t.input_scale = raw("m.input_scale", DType::kBF16, {1}, in);
  auto w = convert_fp8(channel_spec(ActQuant::kStaticTensor), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->input_scale, 0.0625f);
  EXPECT_EQ(w->activation, ActQuant::kStaticTensor);
}

// --- fused shards -----------------------------------------------------------------------------

TEST(Fp8Fused, PerTensorScalesExpandPerRowWithoutRequantizing) {
  const std::vector<int64_t> sizes = {4, 2, 2};
  const std::vector<float> shard_scale = {0.5f, 0.03125f, 3.0f};
  const std::vector<float> shard_input = {0.25f, 0.75f, 0.5f};
  std::vector<std::vector<uint8_t>> q;
  std::vector<Fp8Weights> shards;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    q.push_back(random_fp8(sizes[i] * kK, 100 + static_cast<uint32_t>(i)));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<float> s = {shard_scale[i]};
    std::vector<float> in = {shard_input[i]};
    Fp8Tensors t{raw("m.weight", DType::kF8E4M3, {sizes[i], kK}, q[i]),
                 raw("m.weight_scale", DType::kF32, {}, s)};
    t.input_scale = raw("m.input_scale", DType::kF32, {}, in);
    auto w = convert_fp8(channel_spec(ActQuant::kStaticTensor), t);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    shards.push_back(*w);
  }
  const std::vector<std::string> names = {"q_proj", "k_proj", "v_proj"};
  auto fused = concat_fp8(shards, "qkv_proj", names);
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  EXPECT_EQ(fused->N, 8);
  EXPECT_EQ(fused->granularity, Fp8WeightGranularity::kTensor);
  EXPECT_EQ(fused->input_scale, 0.75f);
  int64_t row = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (int64_t r = 0; r < sizes[i]; ++r, ++row) {
      for (int64_t k = 0; k < kK; ++k) {
        const uint8_t code = q[i][static_cast<std::size_t>(r * kK + k)];
        EXPECT_EQ(fused->qweight[static_cast<std::size_t>(row * kK + k)], code);
        ASSERT_EQ(fused->dequant(row, k), f8e4m3_to_f32(code) * shard_scale[i]);
      }
    }
  }
}

TEST(Fp8Fused, BlockShardsMustNotStraddleBlocks) {
  Fp8Spec spec;
  spec.weight = Fp8WeightGranularity::kBlock;
  spec.block_n = 4;
  spec.block_k = 4;
  std::vector<Fp8Weights> shards;
  std::vector<std::vector<uint8_t>> q = {random_fp8(6 * 8, 1), random_fp8(4 * 8, 2)};
  std::vector<float> s0(4, 1.0f), s1(2, 2.0f);
  auto a = convert_fp8(spec, Fp8Tensors{raw("a.weight", DType::kF8E4M3, {6, 8}, q[0]),
                                        raw("a.weight_scale", DType::kF32, {2, 2}, s0)});
  auto b = convert_fp8(spec, Fp8Tensors{raw("b.weight", DType::kF8E4M3, {4, 8}, q[1]),
                                        raw("b.weight_scale", DType::kF32, {1, 2}, s1)});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<std::string> names = {"gate_proj", "up_proj"};
  auto fused = concat_fp8({*a, *b}, "mlp.gate_up_proj", names);
  ASSERT_FALSE(fused.ok());
  EXPECT_THAT(fused.status().message(),
              HasSubstr("gate_proj has N=6, not a multiple of block_n=4"));
  // Aligned order: the ragged shard last is fine; scale rows concatenate.
  auto ok = concat_fp8({*b, *a}, "mlp.gate_up_proj", names);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  for (int64_t n = 0; n < 10; ++n) {
    for (int64_t k = 0; k < 8; ++k) {
      const float expect = n < 4 ? b->dequant(n, k) : a->dequant(n - 4, k);
      ASSERT_EQ(ok->dequant(n, k), expect);
    }
  }
}

// --- online FP8 -------------------------------------------------------------------------------

TEST(OnlineFp8, PerChannelScalesAndRneCodes) {
  const int64_t n_rows = 5, k_cols = 64;
  std::mt19937 rng(77);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<uint16_t> w_bf16(static_cast<std::size_t>(n_rows * k_cols));
  for (auto& v : w_bf16) v = f32_to_bf16(dist(rng));
  for (int64_t k = 0; k < k_cols; ++k) w_bf16[static_cast<std::size_t>(2 * k_cols + k)] = 0;
  Fp8Spec spec = channel_spec();
  spec.online = true;
  auto w = quantize_online_fp8(
      spec, DenseTensors{raw("m.weight", DType::kBF16, {n_rows, k_cols}, w_bf16)});
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->granularity, Fp8WeightGranularity::kChannel);
  for (int64_t n = 0; n < n_rows; ++n) {
    float amax = 0.0f;
    for (int64_t k = 0; k < k_cols; ++k) {
      amax =
          std::max(amax, std::fabs(bf16_to_f32(w_bf16[static_cast<std::size_t>(n * k_cols + k)])));
    }
    const float s = amax == 0.0f ? 1.0f : amax / 448.0f;
    ASSERT_EQ(w->scale[static_cast<std::size_t>(n)], s);
    for (int64_t k = 0; k < k_cols; ++k) {
      const float x = bf16_to_f32(w_bf16[static_cast<std::size_t>(n * k_cols + k)]);
      const uint8_t code = w->qweight[static_cast<std::size_t>(n * k_cols + k)];
      ASSERT_EQ(code, f32_to_f8e4m3(x / s));
      // e4m3 keeps 3 mantissa bits: relative error <= 2^-4 for normals, absolute <= 2^-10 * s
      // in the subnormal range.
      const float err = std::fabs(w->dequant(n, k) - x);
      ASSERT_LE(err, std::max(std::ldexp(std::fabs(x), -4), std::ldexp(s, -10)) * 1.0001f)
          << n << "," << k;
      if (n == 2) {
        ASSERT_EQ(code, 0);
      }
    }
  }
}

TEST(OnlineFp8, NonFiniteWeightsAreRejected) {
  std::vector<float> w(8, 1.0f);
  w[5] = std::numeric_limits<float>::infinity();
  auto r =
      quantize_online_fp8(channel_spec(), DenseTensors{raw("m.weight", DType::kF32, {2, 4}, w)});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("\"m.weight\" element [1, 1] is inf"));
}

}  // namespace
}  // namespace qlinear
