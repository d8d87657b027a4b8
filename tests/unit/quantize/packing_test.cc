// The layout writers against words packed by hand from docs/reference/formats.md.
#include <gtest/gtest.h>

#include <cstring>

#include "quantize/layouts.h"
#include "quantize/packing.h"

namespace qlinear::layout {
namespace {

std::vector<uint32_t> words(const CheckpointTensor& t) {
  std::vector<uint32_t> w(t.bytes.size() / 4);
  std::memcpy(w.data(), t.bytes.data(), t.bytes.size());
  return w;
}

const CheckpointTensor& find(const std::vector<CheckpointTensor>& ts, const std::string& name) {
  for (const CheckpointTensor& t : ts) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  static const CheckpointTensor empty;
  return empty;
}

TEST(Packing, RowsFourBitIsSequentialAlongK) {
  // Column 0 holds 1..8 down K, column 1 holds 15, 0, 15, 0, ...
  std::vector<uint32_t> v(16);
  for (int r = 0; r < 8; ++r) {
    v[r * 2] = static_cast<uint32_t>(r + 1);
    v[r * 2 + 1] = r % 2 == 0 ? 15u : 0u;
  }
  EXPECT_EQ(pack_rows(v, 8, 2, 4), (std::vector<uint32_t>{0x87654321u, 0x0F0F0F0Fu}));
}

TEST(Packing, ColsEightBit) {
  EXPECT_EQ(pack_cols({1, 2, 3, 0xFF}, 1, 4, 8), (std::vector<uint32_t>{0xFF030201u}));
}

TEST(Packing, AwqInterleave) {
  // Logical columns 0..7 hold the values 0..7; slot i holds column [0,2,4,6,1,3,5,7][i].
  EXPECT_EQ(pack_cols_awq({0, 1, 2, 3, 4, 5, 6, 7}, 1, 8), (std::vector<uint32_t>{0x75316420u}));
}

LinearValues tiny_int(int64_t N, int64_t K, int64_t groups) {
  LinearValues v;
  v.name = std::string(1, 'l');
  v.N = N;
  v.K = K;
  v.codes.resize(static_cast<size_t>(K * N));
  for (size_t i = 0; i < v.codes.size(); ++i) v.codes[i] = static_cast<uint32_t>(i % 16);
  v.zeros.assign(static_cast<size_t>(groups * N), 8);
  v.scales.assign(static_cast<size_t>(groups * N), 0.5);
  for (int64_t k = 0; k < K; ++k) v.g_idx.push_back(static_cast<int32_t>(k / (K / groups)));
  return v;
}

TEST(Layouts, GptqV1SymmetricStoresSevens) {
  LinearValues v = tiny_int(8, 8, 1);
  LayoutScheme s;
  s.layout = LinearLayout::kGptq;
  std::vector<CheckpointTensor> out;
  emit_linear(v, s, out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(find(out, "l.qweight").shape, (Shape{1, 8}));
  // Column n holds codes (k * 8 + n) % 16 down k = 0..7.
  uint32_t col0 = 0;
  for (int k = 0; k < 8; ++k) col0 |= static_cast<uint32_t>((k * 8) % 16) << (4 * k);
  EXPECT_EQ(words(find(out, "l.qweight"))[0], col0);
  EXPECT_EQ(col0, 0x80808080u);
  EXPECT_EQ(words(find(out, "l.qzeros")), (std::vector<uint32_t>{0x77777777u}));
  EXPECT_EQ(find(out, "l.scales").dtype, DType::kF16);
  EXPECT_EQ(find(out, "l.g_idx").shape, (Shape{8}));
}

TEST(Layouts, AwqQweightIsInterleavedAlongN) {
  LinearValues v = tiny_int(8, 8, 1);
  LayoutScheme s;
  s.layout = LinearLayout::kAwq;
  std::vector<CheckpointTensor> out;
  emit_linear(v, s, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(find(out, "l.qweight").shape, (Shape{8, 1}));
  // Row k = 0 holds values 0..7 in columns 0..7 -> the interleaved word of the AWQ test above.
  EXPECT_EQ(words(find(out, "l.qweight"))[0], 0x75316420u);
  // Row 1 holds 8..15.
  EXPECT_EQ(words(find(out, "l.qweight"))[1], 0xFDB9ECA8u);
  EXPECT_EQ(words(find(out, "l.qzeros")), (std::vector<uint32_t>{0x88888888u}));
}

TEST(Layouts, CompressedTensorsPacksTransposedAndZerosAlongN) {
  LinearValues v = tiny_int(8, 8, 1);
  v.zeros = {1, 2, 3, 4, 5, 6, 7, 8};
  LayoutScheme s;
  s.layout = LinearLayout::kCtPacked;
  s.sym = false;
  s.int_scale_dtype = DType::kBF16;
  std::vector<CheckpointTensor> out;
  emit_linear(v, s, out);
  EXPECT_EQ(find(out, "l.weight_packed").shape, (Shape{8, 1}));
  // Output row 0 = codes (k * 8) % 16 along k: 0, 8, 0, 8, ...
  EXPECT_EQ(words(find(out, "l.weight_packed"))[0], 0x80808080u);
  EXPECT_EQ(find(out, "l.weight_zero_point").shape, (Shape{1, 1}));
  EXPECT_EQ(words(find(out, "l.weight_zero_point"))[0], 0x87654321u);
  EXPECT_EQ(find(out, "l.weight_scale").dtype, DType::kBF16);
  EXPECT_EQ(find(out, "l.weight_scale").shape, (Shape{8, 1}));
  const CheckpointTensor& shape = find(out, "l.weight_shape");
  EXPECT_EQ(shape.dtype, DType::kI64);
}

TEST(Layouts, Fp8BlockAndStaticScales) {
  LinearValues v;
  v.name = std::string(1, 'l');
  v.N = 130;
  v.K = 256;
  v.fp8_codes.assign(130 * 256, 0x38);
  v.fp8_scales.assign(2 * 2, 0.25);
  LayoutScheme s;
  s.layout = LinearLayout::kFp8;
  s.granularity = Fp8WeightGranularity::kBlock;
  s.block_n = s.block_k = 128;
  s.fp8_scale_name = "weight_scale_inv";
  std::vector<CheckpointTensor> out;
  emit_linear(v, s, out);
  EXPECT_EQ(find(out, "l.weight").dtype, DType::kF8E4M3);
  EXPECT_EQ(find(out, "l.weight_scale_inv").shape, (Shape{2, 2}));

  v.fp8_scales = {0.5};
  v.input_scale = 0.125;
  LayoutScheme t;
  t.layout = LinearLayout::kFp8;
  t.granularity = Fp8WeightGranularity::kTensor;
  t.activation = ActQuant::kStaticTensor;
  t.scalar_shape = ScalarShape::k1;
  out.clear();
  emit_linear(v, t, out);
  EXPECT_EQ(find(out, "l.weight_scale").shape, (Shape{1}));
  const CheckpointTensor& in = find(out, "l.input_scale");
  ASSERT_EQ(in.bytes.size(), 4u);
  float f = 0;
  std::memcpy(&f, in.bytes.data(), 4);
  EXPECT_EQ(f, 0.125f);
}

}  // namespace
}  // namespace qlinear::layout
