// Integer conversions checked bit-exact against independently packed data: the canonical form of
// AWQ / GPTQ v1 / GPTQ v2 / compressed-tensors packings of one code matrix is the GPTQ packing of
// that matrix (formats.md §1, architecture.md "Canonical weights").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convert/int_convert.h"
#include "test_tensors.h"

namespace qlinear {
namespace {

using testing::as_words;
using testing::awq_order;
using ::testing::HasSubstr;
using testing::pack_along_cols;
using testing::pack_along_rows;
using testing::random_codes;
using testing::random_scales;
using testing::raw;
using testing::sequential_order;
using testing::transpose;

// One layer's logical content: codes q [K, N], true zeros z [G, N], scales [G, N].
struct Layer {
  int bits;
  int64_t k, n, group;
  std::vector<uint32_t> q, z;
  std::vector<float> s;
  int64_t groups() const { return k / group; }
};

Layer make_layer(int bits, int64_t k, int64_t n, int64_t group, uint32_t seed, uint32_t zlo = 0,
                 uint32_t zhi = 0xFFFFFFFF) {
  const uint32_t top = (1u << bits) - 1;
  Layer l{bits,
          k,
          n,
          group,
          random_codes(k, n, 0, top, seed),
          random_codes(k / group, n, zlo, std::min(zhi, top), seed + 1),
          random_scales(k / group * n, seed + 2)};
  return l;
}

float expected_dequant(const Layer& l, int64_t k, int64_t n, bool sym) {
  const auto g = static_cast<std::size_t>(k / l.group);
  const auto idx = g * static_cast<std::size_t>(l.n) + static_cast<std::size_t>(n);
  const int zero = sym ? (1 << (l.bits - 1)) : static_cast<int>(l.z[idx]);
  const int code = static_cast<int>(l.q[static_cast<std::size_t>(k * l.n + n)]);
  return static_cast<float>(code - zero) * l.s[idx];
}

void expect_canonical(const IntWeights& w, const Layer& l, bool sym) {
  EXPECT_EQ(w.K, l.k);
  EXPECT_EQ(w.N, l.n);
  EXPECT_EQ(w.bits, l.bits);
  EXPECT_EQ(w.group_size, l.group);
  EXPECT_EQ(w.num_groups, l.groups());
  EXPECT_EQ(w.qweight, as_words(pack_along_rows(l.q, l.k, l.n, l.bits)));
  EXPECT_EQ(w.scales, l.s);
  if (sym) {
    EXPECT_TRUE(w.zeros.empty());
  } else {
    ASSERT_EQ(w.zeros.size(), l.z.size());
    for (std::size_t i = 0; i < l.z.size(); ++i) ASSERT_EQ(w.zeros[i], l.z[i]) << i;
  }
  EXPECT_TRUE(w.g_idx.empty());
  for (int64_t k = 0; k < l.k; k += 3) {
    for (int64_t n = 0; n < l.n; ++n) ASSERT_EQ(w.dequant(k, n), expected_dequant(l, k, n, sym));
  }
}

IntSpec spec_of(IntPacking packing, int bits, int group, bool sym,
                GptqZeroFormat zf = GptqZeroFormat::kV1) {
  IntSpec s;
  s.bits = bits;
  s.group_size = group;
  s.sym = sym;
  s.packing = packing;
  s.zero_format = zf;
  return s;
}

// --- AWQ --------------------------------------------------------------------------------------

class AwqGolden : public ::testing::TestWithParam<int> {};

TEST_P(AwqGolden, CanonicalIsGptqPackingOfTheSameCodes) {
  const int bits = GetParam();
  const Layer l = make_layer(bits, 64, 32, 16, 11u * static_cast<uint32_t>(bits));
  const auto qweight = pack_along_cols(l.q, l.k, l.n, bits, awq_order(bits));
  const auto qzeros = pack_along_cols(l.z, l.groups(), l.n, bits, awq_order(bits));
  const int64_t pf = 32 / bits;
  IntTensors t{raw("m.qweight", DType::kI32, {l.k, l.n / pf}, qweight),
               raw("m.scales", DType::kF32, {l.groups(), l.n}, l.s),
               raw("m.qzeros", DType::kI32, {l.groups(), l.n / pf}, qzeros)};
  auto w = convert_int(spec_of(IntPacking::kAwq, bits, 16, false), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  expect_canonical(*w, l, false);
}

INSTANTIATE_TEST_SUITE_P(Bits, AwqGolden, ::testing::Values(4, 8));

TEST(AwqInterleave, KnownWordDecodesWithReverseOrder) {
  // Columns 0..7 hold codes 0..7; ORDER puts column ORDER[i] in nibble i: 0x75316420.
  std::vector<int32_t> qweight(8, static_cast<int32_t>(0x75316420u));  // [K=8, N/8=1]
  std::vector<float> scales(8, 1.0f);
  IntTensors t{raw("m.qweight", DType::kI32, {8, 1}, qweight),
               raw("m.scales", DType::kF32, {1, 8}, scales)};
  auto w = convert_int(spec_of(IntPacking::kAwq, 4, -1, true), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  for (int64_t k = 0; k < 8; ++k) {
    for (int64_t n = 0; n < 8; ++n) EXPECT_EQ(w->code(k, n), static_cast<uint32_t>(n));
  }
}

TEST(AwqSym, StoredZerosMustBeEight) {
  const Layer l = make_layer(4, 32, 16, 32, 5);
  const auto qweight = pack_along_cols(l.q, 32, 16, 4, awq_order(4));
  std::vector<int32_t> qzeros(2, static_cast<int32_t>(0x88888888u));
  IntTensors t{raw("m.qweight", DType::kI32, {32, 2}, qweight),
               raw("m.scales", DType::kF32, {1, 16}, l.s),
               raw("m.qzeros", DType::kI32, {1, 2}, qzeros)};
  auto ok = convert_int(spec_of(IntPacking::kAwq, 4, 32, true), t);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  expect_canonical(*ok, l, true);
  qzeros[1] = static_cast<int32_t>(0x88888788u);
  auto bad = convert_int(spec_of(IntPacking::kAwq, 4, 32, true), t);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMisconfigured);
  EXPECT_THAT(bad.status().message(), HasSubstr("\"m.qzeros\""));
  EXPECT_THAT(bad.status().message(), HasSubstr("mis-tagged"));
}

TEST(Awq, TwoBitIsUnsupported) {
  std::vector<int32_t> qweight(32, 0);
  std::vector<float> scales(16, 1.0f);
  IntTensors t{raw("m.qweight", DType::kI32, {32, 1}, qweight),
               raw("m.scales", DType::kF32, {1, 16}, scales)};
  auto w = convert_int(spec_of(IntPacking::kAwq, 2, -1, true), t);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kUnsupported);
}

TEST(Awq, GptqPackedQweightIsReportedWithBothLayouts) {
  // A GPTQ-packed [K/8, N] qweight under an AWQ config.
  const int64_t k = 256, n = 64;
  std::vector<int32_t> qweight(static_cast<std::size_t>(k / 8 * n), 0);
  std::vector<float> scales(static_cast<std::size_t>(2 * n), 1.0f);
  std::vector<int32_t> qzeros(static_cast<std::size_t>(2 * n / 8), 0);
  IntTensors t{raw("model.layers.3.mlp.up_proj.qweight", DType::kI32, {k / 8, n}, qweight),
               raw("m.scales", DType::kF32, {2, n}, scales),
               raw("m.qzeros", DType::kI32, {2, n / 8}, qzeros)};
  auto w = convert_int(spec_of(IntPacking::kAwq, 4, 128, false), t);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.status().message();
  EXPECT_THAT(m, HasSubstr("\"model.layers.3.mlp.up_proj.qweight\" has shape [32, 64]"));
  EXPECT_THAT(m, HasSubstr("AWQ bits=4 expects [K=256, N/8=8]"));
  EXPECT_THAT(m, HasSubstr("GPTQ packing"));
}

// --- GPTQ -------------------------------------------------------------------------------------

class GptqGolden : public ::testing::TestWithParam<int> {};

TEST_P(GptqGolden, V1AndV2EncodingsGiveTheSameCanonicalForm) {
  const int bits = GetParam();
  const int64_t pf = 32 / bits;
  // v1 cannot store z = 0, so zeros are drawn from [1, 2^b - 1].
  const Layer l = make_layer(bits, 128, 32, 32, 7u * static_cast<uint32_t>(bits), 1);
  const auto qweight = pack_along_rows(l.q, l.k, l.n, bits);
  std::vector<uint32_t> z_minus_1(l.z);
  for (auto& v : z_minus_1) v -= 1;
  const auto qzeros_v1 = pack_along_cols(z_minus_1, l.groups(), l.n, bits, sequential_order(bits));
  const auto qzeros_v2 = pack_along_cols(l.z, l.groups(), l.n, bits, sequential_order(bits));
  std::vector<uint16_t> scales_f16(l.s.size());
  for (std::size_t i = 0; i < l.s.size(); ++i) scales_f16[i] = f32_to_f16(l.s[i]);
  Layer l16 = l;  // F16 scales are widened exactly
  for (std::size_t i = 0; i < l.s.size(); ++i) l16.s[i] = f16_to_f32(scales_f16[i]);

  IntTensors t1{raw("m.qweight", DType::kI32, {l.k / pf, l.n}, qweight),
                raw("m.scales", DType::kF16, {l.groups(), l.n}, scales_f16),
                raw("m.qzeros", DType::kI32, {l.groups(), l.n / pf}, qzeros_v1)};
  IntTensors t2 = t1;
  t2.qzeros = raw("m.qzeros", DType::kI32, {l.groups(), l.n / pf}, qzeros_v2);
  auto w1 = convert_int(spec_of(IntPacking::kGptq, bits, 32, false, GptqZeroFormat::kV1), t1);
  auto w2 = convert_int(spec_of(IntPacking::kGptq, bits, 32, false, GptqZeroFormat::kV2), t2);
  ASSERT_TRUE(w1.ok()) << w1.status().to_string();
  ASSERT_TRUE(w2.ok()) << w2.status().to_string();
  expect_canonical(*w1, l16, false);
  expect_canonical(*w2, l16, false);
}

INSTANTIATE_TEST_SUITE_P(Bits, GptqGolden, ::testing::Values(2, 4, 8));

TEST(GptqV1, ZeroPointZeroIsFlagged) {
  Layer l = make_layer(4, 64, 16, 32, 3, 1);
  l.z[17] = 0;  // group 1, column 1: stored as 15, read by v1 kernels as 16
  std::vector<uint32_t> z_minus_1(l.z);
  for (auto& v : z_minus_1) v = (v - 1) & 0xF;
  const auto qweight = pack_along_rows(l.q, 64, 16, 4);
  const auto qzeros = pack_along_cols(z_minus_1, 2, 16, 4, sequential_order(4));
  IntTensors t{raw("m.qweight", DType::kI32, {8, 16}, qweight),
               raw("m.scales", DType::kF32, {2, 16}, l.s),
               raw("m.qzeros", DType::kI32, {2, 2}, qzeros)};
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, false), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.qzeros\""));
  EXPECT_THAT(w.status().message(), HasSubstr("qzeros[1][1]"));
  EXPECT_THAT(w.status().message(), HasSubstr("z=16"));
}

struct SymCase {
  GptqZeroFormat format;
  int bits;
  uint32_t word;  // the correct stored word
  int wrong_shift;
};

class GptqSym : public ::testing::TestWithParam<SymCase> {};

TEST_P(GptqSym, StoredZerosAreVerified) {
  const SymCase c = GetParam();
  const int64_t pf = 32 / c.bits;
  const Layer l = make_layer(c.bits, 64, 32, 32, 9);
  const auto qweight = pack_along_rows(l.q, 64, 32, c.bits);
  std::vector<int32_t> qzeros(static_cast<std::size_t>(2 * 32 / pf), static_cast<int32_t>(c.word));
  IntTensors t{raw("model.layers.0.self_attn.q_proj.qweight", DType::kI32, {64 / pf, 32}, qweight),
               raw("m.scales", DType::kF32, {2, 32}, l.s),
               raw("model.layers.0.self_attn.q_proj.qzeros", DType::kI32, {2, 32 / pf}, qzeros)};
  const IntSpec spec = spec_of(IntPacking::kGptq, c.bits, 32, true, c.format);
  auto ok = convert_int(spec, t);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  expect_canonical(*ok, l, true);

  qzeros[3] = static_cast<int32_t>(c.word ^ (1u << c.wrong_shift));  // one code changed
  auto bad = convert_int(spec, t);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMisconfigured);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("\"model.layers.0.self_attn.q_proj.qzeros\": checkpoint is mis-tagged: "
                        "sym=true"));
}

INSTANTIATE_TEST_SUITE_P(Formats, GptqSym,
                         ::testing::Values(SymCase{GptqZeroFormat::kV1, 4, 0x77777777u, 9},
                                           SymCase{GptqZeroFormat::kV2, 4, 0x88888888u, 29},
                                           SymCase{GptqZeroFormat::kV1, 8, 0x7F7F7F7Fu, 8},
                                           SymCase{GptqZeroFormat::kV2, 8, 0x80808080u, 0}));

TEST(GptqSym, V1ZerosUnderV2TagAreMisTagged) {
  const Layer l = make_layer(4, 32, 8, 32, 1);
  const auto qweight = pack_along_rows(l.q, 32, 8, 4);
  std::vector<int32_t> qzeros(1, static_cast<int32_t>(0x77777777u));
  IntTensors t{raw("m.qweight", DType::kI32, {4, 8}, qweight),
               raw("m.scales", DType::kF32, {1, 8}, l.s),
               raw("m.qzeros", DType::kI32, {1, 1}, qzeros)};
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, true, GptqZeroFormat::kV2), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("qzeros[0][0] = 7 (expected 8 for GPTQ v2 4-bit)"));
}

// --- g_idx ------------------------------------------------------------------------------------

struct GidxFixture {
  Layer l = make_layer(4, 64, 16, 16, 21);
  std::vector<int32_t> qweight = pack_along_rows(l.q, 64, 16, 4);
  std::vector<int32_t> g_idx;
  IntTensors tensors() const {
    IntTensors t{raw("m.qweight", DType::kI32, {8, 16}, qweight),
                 raw("m.scales", DType::kF32, {4, 16}, l.s)};
    t.g_idx = raw("m.g_idx", DType::kI32, {static_cast<int64_t>(g_idx.size())}, g_idx);
    return t;
  }
};

IntSpec act_order_spec(bool act_order) {
  IntSpec s = spec_of(IntPacking::kGptq, 4, 16, true);
  s.act_order = act_order;
  return s;
}

TEST(GIdx, TrivialIsDropped) {
  GidxFixture f;
  for (int k = 0; k < 64; ++k) f.g_idx.push_back(k / 16);
  auto w = convert_int(act_order_spec(true), f.tensors());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_TRUE(w->g_idx.empty());
  expect_canonical(*w, f.l, true);
}

TEST(GIdx, PermutedIsKeptAndUsedByDequant) {
  GidxFixture f;
  for (int k = 0; k < 64; ++k) f.g_idx.push_back((k * 7 + 3) % 4);  // 16 members per group
  auto w = convert_int(act_order_spec(true), f.tensors());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->g_idx, f.g_idx);
  for (int64_t k = 0; k < 64; ++k) {
    for (int64_t n = 0; n < 16; ++n) {
      const auto g = static_cast<std::size_t>(f.g_idx[static_cast<std::size_t>(k)]);
      const float s = f.l.s[g * 16 + static_cast<std::size_t>(n)];
      const int q = static_cast<int>(f.l.q[static_cast<std::size_t>(k * 16 + n)]);
      ASSERT_EQ(w->dequant(k, n), static_cast<float>(q - 8) * s);
    }
  }
}

TEST(GIdx, OutOfRangeValue) {
  GidxFixture f;
  for (int k = 0; k < 64; ++k) f.g_idx.push_back(k / 16);
  f.g_idx[5] = 4;
  auto w = convert_int(act_order_spec(true), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("g_idx[5] = 4 is outside [0, 4)"));
}

TEST(GIdx, WrongGroupPopulation) {
  GidxFixture f;
  for (int k = 0; k < 64; ++k) f.g_idx.push_back(k / 16);
  f.g_idx[0] = 1;  // group 0 has 15 members, group 1 has 17
  auto w = convert_int(act_order_spec(true), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.g_idx\": group 0 has 15 members"));
}

TEST(GIdx, ActOrderWithoutGIdx) {
  GidxFixture f;
  IntTensors t = f.tensors();
  t.g_idx.reset();
  auto w = convert_int(act_order_spec(true), t);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kMisconfigured);
  EXPECT_THAT(w.status().message(), HasSubstr("no g_idx"));
}

TEST(GIdx, NonTrivialWithoutActOrderIsMisTagged) {
  GidxFixture f;
  for (int k = 0; k < 64; ++k) f.g_idx.push_back((k * 7 + 3) % 4);
  auto w = convert_int(act_order_spec(false), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kMisconfigured);
}

// --- compressed-tensors pack-quantized --------------------------------------------------------

class CtGolden : public ::testing::TestWithParam<int> {};

TEST_P(CtGolden, TransposedPackingGivesTheSameCanonical) {
  const int bits = GetParam();
  const int64_t pf = 32 / bits;
  const Layer l = make_layer(bits, 64, 32, 32, 31u + static_cast<uint32_t>(bits));
  // weight_packed [N, K/pf]: the transposed codes packed along their columns (K).
  const auto q_t = transpose(l.q, l.k, l.n);
  const auto packed = pack_along_cols(q_t, l.n, l.k, bits, sequential_order(bits));
  const auto scale_t = transpose(l.s, l.groups(), l.n);  // [N, G]
  const auto zp = pack_along_rows(transpose(l.z, l.groups(), l.n), l.n, l.groups(), bits);
  std::vector<int64_t> shape = {l.n, l.k};
  IntTensors t{raw("m.weight_packed", DType::kI32, {l.n, l.k / pf}, packed),
               raw("m.weight_scale", DType::kF32, {l.n, l.groups()}, scale_t),
               raw("m.weight_zero_point", DType::kI32, {l.n / pf, l.groups()}, zp)};
  t.weight_shape = raw("m.weight_shape", DType::kI64, {2}, shape);
  auto w = convert_int(spec_of(IntPacking::kCtPacked, bits, 32, false), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  expect_canonical(*w, l, false);

  shape[1] = 32;
  auto bad = convert_int(spec_of(IntPacking::kCtPacked, bits, 32, false), t);
  ASSERT_FALSE(bad.ok());
}

INSTANTIATE_TEST_SUITE_P(Bits, CtGolden, ::testing::Values(2, 4, 8));

TEST(Ct, ChannelwiseSymmetric) {
  const Layer l = make_layer(4, 64, 16, 64, 41);
  const auto packed = pack_along_cols(transpose(l.q, 64, 16), 16, 64, 4, sequential_order(4));
  IntTensors t{raw("m.weight_packed", DType::kI32, {16, 8}, packed),
               raw("m.weight_scale", DType::kF32, {16, 1}, l.s)};  // [N, 1]: G = 1
  auto w = convert_int(spec_of(IntPacking::kCtPacked, 4, -1, true), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->group_size, 64);
  EXPECT_EQ(w->num_groups, 1);
  expect_canonical(*w, l, true);
}

// --- checks -----------------------------------------------------------------------------------

struct Simple {
  Layer l = make_layer(4, 64, 16, 32, 51);
  std::vector<int32_t> qweight = pack_along_rows(l.q, 64, 16, 4);
  IntTensors tensors() const {
    return IntTensors{raw("m.qweight", DType::kI32, {8, 16}, qweight),
                      raw("m.scales", DType::kF32, {2, 16}, l.s)};
  }
};

TEST(IntChecks, BadScalesAreNamedWithIndexAndValue) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    0.0f, -0.5f}) {
    Simple f;
    f.l.s[19] = bad;  // [1, 3]
    auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, true), f.tensors());
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_EQ(w.status().code(), ErrorCode::kCorrupt);
    EXPECT_THAT(w.status().message(), HasSubstr("\"m.scales\" element [1, 3] is"));
    EXPECT_THAT(w.status().message(), HasSubstr(fmt::format("{}", bad)));
  }
}

TEST(IntChecks, ScaleDtypesWidenExactly) {
  Simple f;
  std::vector<uint16_t> bf(f.l.s.size());
  for (std::size_t i = 0; i < bf.size(); ++i) bf[i] = f32_to_bf16(f.l.s[i]);
  IntTensors t = f.tensors();
  t.scales = raw("m.scales", DType::kBF16, {2, 16}, bf);
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, true), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  for (std::size_t i = 0; i < bf.size(); ++i) EXPECT_EQ(w->scales[i], bf16_to_f32(bf[i]));
}

TEST(IntChecks, DtypesAreChecked) {
  Simple f;
  std::vector<float> fake(f.qweight.size(), 0.0f);
  IntTensors t = f.tensors();
  t.qweight = raw("m.qweight", DType::kF32, {8, 16}, fake);
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, true), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.qweight\" has dtype F32"));
  EXPECT_THAT(w.status().message(), HasSubstr("I32"));

  std::vector<int32_t> int_scales(f.l.s.size(), 1);
  IntTensors t2 = f.tensors();
  t2.scales = raw("m.scales", DType::kI32, {2, 16}, int_scales);
  auto w2 = convert_int(spec_of(IntPacking::kGptq, 4, 32, true), t2);
  ASSERT_FALSE(w2.ok());
  EXPECT_THAT(w2.status().message(), HasSubstr("\"m.scales\" has dtype I32"));
}

TEST(IntChecks, WrongBitsIsReported) {
  Simple f;  // packed with 4 bits, tagged 8 bits
  auto w = convert_int(spec_of(IntPacking::kGptq, 8, 32, true), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("GPTQ bits=8 expects [K/4=16, N=16]"));
  EXPECT_THAT(w.status().message(), HasSubstr("4-bit packing"));
}

TEST(IntChecks, UnsupportedBits) {
  Simple f;
  auto w = convert_int(spec_of(IntPacking::kGptq, 3, 32, true), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(w.status().message(), HasSubstr("bits=3"));
}

TEST(IntChecks, KMustBeAMultipleOfThePackFactor) {
  // Channelwise, K = 12 from g_idx (all zeros): 12 % 8 != 0.
  std::vector<int32_t> qweight(16, 0);
  std::vector<float> scales(16, 1.0f);
  std::vector<int32_t> g_idx(12, 0);
  IntTensors t{raw("m.qweight", DType::kI32, {1, 16}, qweight),
               raw("m.scales", DType::kF32, {1, 16}, scales)};
  t.g_idx = raw("m.g_idx", DType::kI32, {12}, g_idx);
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, -1, true), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("K=12 is not a multiple of 8"));
}

TEST(IntChecks, NMustBeAMultipleOfThePackFactorForNPackedTensors) {
  std::vector<int32_t> qweight(32 * 2, 0);
  std::vector<float> scales(12, 1.0f);
  IntTensors t{raw("m.qweight", DType::kI32, {32, 2}, qweight),
               raw("m.scales", DType::kF32, {1, 12}, scales)};
  auto w = convert_int(spec_of(IntPacking::kAwq, 4, -1, true), t);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("N=12 is not a multiple of 8"));
}

TEST(IntChecks, ScaleRowsMustMatchTheGroups) {
  Simple f;
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 16, true), f.tensors());
  ASSERT_FALSE(w.ok());  // K = 2 * 16 = 32 from the scales, but qweight holds K = 64
  EXPECT_THAT(w.status().message(), HasSubstr("\"m.qweight\" has shape [8, 16]"));
}

TEST(IntChecks, AsymmetricNeedsZeros) {
  Simple f;
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, false), f.tensors());
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("no qzeros"));
}

TEST(IntChecks, BiasIsWidened) {
  Simple f;
  std::vector<uint16_t> bias(16);
  for (int i = 0; i < 16; ++i) bias[static_cast<std::size_t>(i)] = f32_to_f16(0.25f * i);
  IntTensors t = f.tensors();
  t.bias = raw("m.bias", DType::kF16, {16}, bias);
  auto w = convert_int(spec_of(IntPacking::kGptq, 4, 32, true), t);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(w->bias[static_cast<std::size_t>(i)], 0.25f * i);
  t.bias = raw("m.bias", DType::kF16, {8}, bias);
  EXPECT_FALSE(convert_int(spec_of(IntPacking::kGptq, 4, 32, true), t).ok());
}

}  // namespace
}  // namespace qlinear
