// The FP8 activation quantizer against hand-computed codes (formats.md §4.3). e4m3fn codes are
// written out by hand: sign | exponent (bias 7) | 3 mantissa bits.
#include "kernels/common/activation_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace qlinear {
namespace {

constexpr uint8_t kCode448 = 0x7E;   // 0 1111 110 = 1.75 * 2^8
constexpr uint8_t kCode1p5 = 0x3C;   // 0 0111 100 = 1.5
constexpr uint8_t kCodeM1p5 = 0xBC;  // -1.5
constexpr uint8_t kCode1 = 0x38;     // 0 0111 000 = 1.0
constexpr uint8_t kCode1p25 = 0x3A;  // 0 0111 010 = 1.25
constexpr uint8_t kCode0p5 = 0x30;   // 0 0110 000 = 0.5
constexpr uint8_t kCodeM448 = 0xFE;  // -448

QuantizedActivations quantize(const std::vector<float>& x, int64_t M, ActQuant kind,
                              float static_scale = 0.0f, int64_t group_k = 0) {
  const int64_t K = static_cast<int64_t>(x.size()) / M;
  auto q = quantize_activations(x.data(), M, K, kind, static_scale, group_k);
  EXPECT_TRUE(q.ok()) << q.status().to_string();
  return q.ok() ? std::move(q).value() : QuantizedActivations{};
}

TEST(ActivationQuant, PerTokenAbsmax896GivesScale2) {
  // absmax 896 -> s = 896/448 = 2; 3/2 = 1.5 exactly.
  const auto q = quantize({896.0f, 3.0f, -3.0f, 0.0f}, 1, ActQuant::kDynamicToken);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 2.0f);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{kCode448, kCode1p5, kCodeM1p5, 0x00}));
}

TEST(ActivationQuant, PerTokenScalesEachRowAndFloorsTheZeroRow) {
  const auto q = quantize({896.0f, 3.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.75f, 0.4375f, -0.875f}, 3,
                          ActQuant::kDynamicToken);
  ASSERT_EQ(q.scales.size(), 3u);
  EXPECT_EQ(q.scales[0], 2.0f);
  EXPECT_EQ(q.scales[1], 1.0f / 229376.0f);  // 1/(448*512): keeps an all-zero row finite
  EXPECT_EQ(q.scales[2], 1.0f / 256.0f);     // 1.75/448
  EXPECT_EQ(q.codes[3], 0x00);
  EXPECT_EQ(q.codes[4], 0x00);
  EXPECT_EQ(q.codes[5], 0x00);
  EXPECT_EQ(q.codes[6], kCode448);
  EXPECT_EQ(q.codes[7], 0x6E);  // 0.4375*256 = 112 = 1.75 * 2^6: 0 1101 110
  EXPECT_EQ(q.codes[8], 0xF6);  // -0.875*256 = -224 = -1.75 * 2^7: 1 1110 110
}

TEST(ActivationQuant, TiesRoundToEven) {
  // s = 2 (absmax 896). 2.125/2 = 1.0625 lies halfway between 1.0 (mantissa 000) and 1.125
  // (001): even wins, 1.0. 2.375/2 = 1.1875 lies between 1.125 (001) and 1.25 (010): 1.25.
  const auto q = quantize({896.0f, 2.125f, 2.375f}, 1, ActQuant::kDynamicToken);
  EXPECT_EQ(q.codes[1], kCode1);
  EXPECT_EQ(q.codes[2], kCode1p25);
}

TEST(ActivationQuant, StaticSaturatesByClampInsteadOfNan) {
  // s = 1: 464 is the tie between 448 and the NaN code; the clamp makes it 448, as it does for
  // everything larger and for infinity.
  const auto q =
      quantize({464.0f, 1000.0f, -500.0f, INFINITY, 1.0625f}, 1, ActQuant::kStaticTensor, 1.0f);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{kCode448, kCode448, kCodeM448, kCode448, kCode1}));
  EXPECT_EQ(q.scales, std::vector<float>{1.0f});
}

TEST(ActivationQuant, UnderflowHalfTheSmallestSubnormalIsZero) {
  // Smallest subnormal 2^-9 (code 0x01); 2^-10 is the tie with 0 and rounds to even 0.
  const float half = std::ldexp(1.0f, -10);
  const auto q =
      quantize({half, half * 1.0001f, std::ldexp(1.0f, -9)}, 1, ActQuant::kStaticTensor, 1.0f);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0x00, 0x01, 0x01}));
}

TEST(ActivationQuant, StaticScaleDividesByMultiplyingTheReciprocal) {
  // s = 0.5: x * (1/s) = 2x.
  const auto q = quantize({0.75f, -0.25f, 300.0f}, 1, ActQuant::kStaticTensor, 0.5f);
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{kCode1p5, 0xB0 /* -0.5 */, kCode448}));
}

TEST(ActivationQuant, PerTensorUsesOneScaleOverAllRows) {
  // absmax over both rows 896 -> s = 2 for every element.
  const auto q = quantize({896.0f, 1.0f, 3.0f, 0.0f}, 2, ActQuant::kDynamicTensor);
  EXPECT_EQ(q.scales, std::vector<float>{2.0f});
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{kCode448, kCode0p5, kCode1p5, 0x00}));
  EXPECT_EQ(q.scale(1, 1), 2.0f);
}

TEST(ActivationQuant, PerTensorZeroInputUsesTheFloor) {
  const auto q = quantize({0.0f, 0.0f}, 1, ActQuant::kDynamicTensor);
  EXPECT_EQ(q.scales, std::vector<float>{1.0f / 229376.0f});
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{0x00, 0x00}));
}

TEST(ActivationQuant, PerGroupScalesEachRunOfColumnsWithARaggedTail) {
  // K = 6, groups of 4: [0, 4) and the ragged [4, 6). Row 0: group absmax 896 and 1.75.
  // Row 1: group absmax 448 and 0 (floor).
  const auto q = quantize({896.0f, 3.0f, 0.0f, -3.0f, 1.75f, 0.4375f,  //
                           448.0f, 1.0f, 0.5f, 1.5f, 0.0f, 0.0f},
                          2, ActQuant::kDynamicGroup, 0.0f, 4);
  ASSERT_EQ(q.groups_per_row(), 2);
  EXPECT_EQ(q.scales, (std::vector<float>{2.0f, 1.0f / 256.0f, 1.0f, 1.0f / 229376.0f}));
  EXPECT_EQ(q.codes, (std::vector<uint8_t>{kCode448, kCode1p5, 0x00, kCodeM1p5, kCode448, 0x6E,
                                           kCode448, kCode1, kCode0p5, kCode1p5, 0x00, 0x00}));
  EXPECT_EQ(q.scale(0, 5), 1.0f / 256.0f);
  EXPECT_EQ(q.scale(1, 2), 1.0f);
}

TEST(ActivationQuant, DequantizeMultipliesCodeByItsScale) {
  const auto q = quantize({896.0f, 3.0f, 0.1f, 1.75f}, 2, ActQuant::kDynamicToken);
  std::vector<float> out(4);
  dequantize_activations(q, out.data());
  // Row 1: s = 1/256; 0.1*256 = 25.6 rounds to 26 (spacing 2 in [16, 32)).
  EXPECT_EQ(out, (std::vector<float>{896.0f, 3.0f, 26.0f / 256.0f, 1.75f}));
}

TEST(ActivationQuant, RejectsMissingScaleAndKindNone) {
  const std::vector<float> x{1.0f, 2.0f};
  EXPECT_FALSE(quantize_activations(x.data(), 1, 2, ActQuant::kStaticTensor, 0.0f).ok());
  EXPECT_FALSE(quantize_activations(x.data(), 1, 2, ActQuant::kStaticTensor, NAN).ok());
  EXPECT_FALSE(quantize_activations(x.data(), 1, 2, ActQuant::kNone).ok());
  EXPECT_FALSE(quantize_activations(x.data(), 1, 2, ActQuant::kDynamicGroup, 0.0f, 0).ok());
  const auto bad = quantize_activations(x.data(), 1, 2, ActQuant::kStaticTensor, -1.0f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input_scale=-1"), std::string::npos)
      << bad.status().message();
}

TEST(ActivationQuant, W8A8ActivationKindForWeightOnlyCheckpoints) {
  LinearProblem p;
  p.scheme = WeightScheme::kFp8;
  p.fp8_weight = Fp8WeightGranularity::kChannel;
  p.act_quant = ActQuant::kNone;
  EXPECT_EQ(w8a8_act_quant(p), ActQuant::kDynamicToken);
  EXPECT_EQ(w8a8_act_group_k(p), 128);
  p.fp8_weight = Fp8WeightGranularity::kBlock;
  p.block_n = 128;
  p.block_k = 64;
  EXPECT_EQ(w8a8_act_quant(p), ActQuant::kDynamicGroup);
  EXPECT_EQ(w8a8_act_group_k(p), 64);
  p.act_quant = ActQuant::kStaticTensor;
  EXPECT_EQ(w8a8_act_quant(p), ActQuant::kStaticTensor);
}

}  // namespace
}  // namespace qlinear
