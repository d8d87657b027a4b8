#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convert/canonical.h"
#include "kernels/problem.h"

namespace qlinear {
namespace {

void expect_same(const LinearProblem& a, const LinearProblem& b, const std::string& where) {
  EXPECT_EQ(a.scheme, b.scheme) << where;
  EXPECT_EQ(a.bits, b.bits) << where;
  EXPECT_EQ(a.group_size, b.group_size) << where;
  EXPECT_EQ(a.has_zeros, b.has_zeros) << where;
  EXPECT_EQ(a.act_order, b.act_order) << where;
  EXPECT_EQ(a.fp8_weight, b.fp8_weight) << where;
  EXPECT_EQ(a.block_n, b.block_n) << where;
  EXPECT_EQ(a.block_k, b.block_k) << where;
  EXPECT_EQ(a.act_quant, b.act_quant) << where;
  EXPECT_EQ(a.fp8_mode, b.fp8_mode) << where;
  EXPECT_EQ(a.weight_dtype, b.weight_dtype) << where;
  EXPECT_EQ(a.K, b.K) << where;
  EXPECT_EQ(a.N, b.N) << where;
  EXPECT_EQ(a.full_K, b.full_K) << where;
  EXPECT_EQ(a.full_N, b.full_N) << where;
  EXPECT_EQ(a.tp, b.tp) << where;
  EXPECT_EQ(a.act_dtype, b.act_dtype) << where;
  EXPECT_EQ(a.out_dtype, b.out_dtype) << where;
  EXPECT_EQ(a.has_bias, b.has_bias) << where;
}

void expect_round_trip(const LinearProblem& problem) {
  const std::string text = problem.to_string();
  auto parsed = LinearProblem::parse(text);
  ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status().to_string();
  expect_same(*parsed, problem, text);
  EXPECT_EQ(parsed->to_string(), text);
}

TEST(ProblemTest, IntRoundTripGrid) {
  for (int bits : {2, 3, 4, 8}) {
    for (int group : {32, 128, 4096}) {
      for (bool zp : {false, true}) {
        for (bool ao : {false, true}) {
          for (int tp : {1, 2, 4}) {
            for (DType act : {DType::kBF16, DType::kF16, DType::kF32}) {
              LinearProblem p;
              p.scheme = WeightScheme::kInt;
              p.bits = bits;
              p.group_size = group;
              p.has_zeros = zp;
              p.act_order = ao;
              p.K = 4096;
              p.N = 11008 / tp;
              p.full_K = 4096;
              p.full_N = 11008;
              p.tp = tp;
              p.act_dtype = act;
              p.has_bias = ao;
              p.out_dtype = zp ? DType::kBF16 : DType::kF32;
              expect_round_trip(p);
            }
          }
        }
      }
    }
  }
}

TEST(ProblemTest, Fp8RoundTripGrid) {
  const ActQuant acts[] = {ActQuant::kNone, ActQuant::kDynamicToken, ActQuant::kDynamicTensor,
                           ActQuant::kStaticTensor, ActQuant::kDynamicGroup};
  for (Fp8WeightGranularity g : {Fp8WeightGranularity::kTensor, Fp8WeightGranularity::kChannel,
                                 Fp8WeightGranularity::kBlock}) {
    for (ActQuant act : acts) {
      for (Fp8Mode mode : {Fp8Mode::kNone, Fp8Mode::kW8A16, Fp8Mode::kW8A8}) {
        if (mode == Fp8Mode::kW8A8 && act == ActQuant::kNone) continue;
        LinearProblem p;
        p.scheme = WeightScheme::kFp8;
        p.fp8_weight = g;
        if (g == Fp8WeightGranularity::kBlock) {
          p.block_n = 128;
          p.block_k = 64;
        }
        p.act_quant = act;
        p.fp8_mode = mode;
        p.K = 7168;
        p.N = 576;
        p.full_K = 14336;
        p.full_N = 576;
        p.tp = 2;
        expect_round_trip(p);
      }
    }
  }
}

TEST(ProblemTest, DenseRoundTrip) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    LinearProblem p;
    p.scheme = WeightScheme::kDense;
    p.weight_dtype = dtype;
    p.K = 4096;
    p.N = 128256;
    p.full_K = 4096;
    p.full_N = 128256;
    p.has_bias = dtype == DType::kF16;
    expect_round_trip(p);
  }
}

// The grammar's published examples (problem.cc header), written by hand.
TEST(ProblemTest, ParsesTheDocumentedForm) {
  auto p = LinearProblem::parse("int4:g128:zp:ao:K4096:N11008:tp2:Kf8192:Nf11008:a=bf16");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->scheme, WeightScheme::kInt);
  EXPECT_EQ(p->bits, 4);
  EXPECT_EQ(p->group_size, 128);
  EXPECT_TRUE(p->has_zeros);
  EXPECT_TRUE(p->act_order);
  EXPECT_EQ(p->K, 4096);
  EXPECT_EQ(p->N, 11008);
  EXPECT_EQ(p->tp, 2);
  EXPECT_EQ(p->full_K, 8192);
  EXPECT_EQ(p->full_N, 11008);
  EXPECT_EQ(p->act_dtype, DType::kBF16);
  EXPECT_EQ(p->out_dtype, DType::kF32);
  EXPECT_FALSE(p->has_bias);

  auto f = LinearProblem::parse("fp8:block128x128:dyn-group:w8a8:K7168:N576:a=f16:o=bf16:bias");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->scheme, WeightScheme::kFp8);
  EXPECT_EQ(f->fp8_weight, Fp8WeightGranularity::kBlock);
  EXPECT_EQ(f->block_n, 128);
  EXPECT_EQ(f->block_k, 128);
  EXPECT_EQ(f->act_quant, ActQuant::kDynamicGroup);
  EXPECT_EQ(f->fp8_mode, Fp8Mode::kW8A8);
  EXPECT_EQ(f->full_K, 7168);  // defaults to the local extents
  EXPECT_EQ(f->full_N, 576);
  EXPECT_EQ(f->act_dtype, DType::kF16);
  EXPECT_EQ(f->out_dtype, DType::kBF16);
  EXPECT_TRUE(f->has_bias);

  // Token order after the head is free.
  auto d = LinearProblem::parse("dense:K64:bias:N32:f16");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->weight_dtype, DType::kF16);
  EXPECT_EQ(d->act_dtype, DType::kBF16);  // default
}

TEST(ProblemTest, ToStringIsTheDocumentedForm) {
  LinearProblem p;
  p.scheme = WeightScheme::kInt;
  p.bits = 4;
  p.group_size = 128;
  p.has_zeros = true;
  p.K = 4096;
  p.N = 11008;
  p.full_K = 4096;
  p.full_N = 11008;
  EXPECT_EQ(p.to_string(), "int4:g128:zp:K4096:N11008:a=bf16");
  EXPECT_EQ(p.scheme_string(), "w4a16 g128 zp");
  p.act_order = true;
  EXPECT_EQ(p.scheme_string(), "w4a16 g128 zp act-order");
  p.act_order = false;
  p.group_size = 4096;
  EXPECT_EQ(p.scheme_string(), "w4a16 channelwise zp");

  LinearProblem f;
  f.scheme = WeightScheme::kFp8;
  f.fp8_weight = Fp8WeightGranularity::kChannel;
  f.act_quant = ActQuant::kDynamicToken;
  f.fp8_mode = Fp8Mode::kW8A8;
  f.K = f.full_K = 4096;
  f.N = f.full_N = 4096;
  EXPECT_EQ(f.to_string(), "fp8:channel:dyn-token:w8a8:K4096:N4096:a=bf16");
  EXPECT_EQ(f.scheme_string(), "fp8 channel w8a8 dyn-token");

  LinearProblem d;
  d.scheme = WeightScheme::kDense;
  d.weight_dtype = DType::kBF16;
  d.K = d.full_K = 4096;
  d.N = d.full_N = 128256;
  EXPECT_EQ(d.to_string(), "dense:bf16:K4096:N128256:a=bf16");
  EXPECT_EQ(d.scheme_string(), "dense bf16");
}

TEST(ProblemTest, ParseErrorsNameTheToken) {
  struct Case {
    const char* text;
    const char* expected;  // substring of the message
  };
  const Case cases[] = {
      {"int4:g128:K64:N64:bogus", "\"bogus\""},
      {"int4:g128:K64:N64:dyn-token", "\"dyn-token\""},  // an fp8 token in an int problem
      {"int9:g128:K64:N64", "\"int9\""},
      {"float:K64:N64", "\"float\""},
      {"int4:g128:N64", "K<n>"},
      {"int4:g128:K64", "N<n>"},
      {"int4:K64:N64", "g<size>"},
      {"fp8:K64:N64", "granularity"},
      {"dense:K64:N64", "dtype"},
      {"int4:g128:K64:K32:N64", "\"K32\""},
      {"int4:g0:K64:N64", "\"g0\""},
      {"int4:g128:K-4:N64", "\"K-4\""},
      {"int4:g128:K64:N64:a=int8", "\"a=int8\""},
      {"fp8:block128:K64:N64", "\"block128\""},
      {"fp8:channel:w8a8:K64:N64", "w8a8 needs an activation"},
      {"int4:g128:K64:N64:tp2:Kf32", "smaller"},
      {"", "\"\""},
  };
  for (const Case& c : cases) {
    auto p = LinearProblem::parse(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument) << c.text;
    EXPECT_NE(p.status().message().find(c.expected), std::string::npos)
        << c.text << " -> " << p.status().message();
  }
}

TEST(ProblemTest, FromCanonicalInt) {
  Canonical c;
  c.name = "model.layers.0.mlp.down_proj";
  IntWeights w;
  w.bits = 4;
  w.K = 256;
  w.N = 64;
  w.group_size = 128;
  w.num_groups = 2;
  w.qweight.assign(256 * 4 / 32 * 64, 0);
  w.scales.assign(2 * 64, 1.0f);
  w.zeros.assign(2 * 64, 8);
  w.g_idx.assign(256, 0);
  for (int k = 0; k < 256; ++k) w.g_idx[k] = (k * 7) % 2;
  c.weights = w;
  c.shard_sizes = {64};
  const LinearProblem p = LinearProblem::from_canonical(c);
  EXPECT_EQ(p.scheme, WeightScheme::kInt);
  EXPECT_EQ(p.bits, 4);
  EXPECT_EQ(p.group_size, 128);
  EXPECT_TRUE(p.has_zeros);
  EXPECT_TRUE(p.act_order);
  EXPECT_FALSE(p.has_bias);
  EXPECT_EQ(p.K, 256);
  EXPECT_EQ(p.N, 64);
  EXPECT_EQ(p.full_K, 256);
  EXPECT_EQ(p.tp, 1);
  EXPECT_EQ(p.fp8_mode, Fp8Mode::kNone);

  // down_proj is row-parallel: the local view's K is 1/tp of the full K.
  const LinearProblem sharded = LinearProblem::from_canonical(c, 2);
  EXPECT_EQ(sharded.tp, 2);
  EXPECT_EQ(sharded.K, 256);
  EXPECT_EQ(sharded.full_K, 512);
  EXPECT_EQ(sharded.full_N, 64);

  // up_proj is column-parallel: N is split.
  c.name = "model.layers.0.mlp.gate_up_proj";
  const LinearProblem column = LinearProblem::from_canonical(c, 2);
  EXPECT_EQ(column.full_K, 256);
  EXPECT_EQ(column.full_N, 128);
}

TEST(ProblemTest, FromCanonicalFp8AndDense) {
  Canonical c;
  c.name = "model.layers.0.self_attn.qkv_proj";
  Fp8Weights f;
  f.K = 256;
  f.N = 256;
  f.granularity = Fp8WeightGranularity::kBlock;
  f.block_n = 128;
  f.block_k = 128;
  f.qweight.assign(256 * 256, 0);
  f.scale.assign(4, 1.0f);
  f.activation = ActQuant::kDynamicGroup;
  f.bias.assign(256, 0.0f);
  c.weights = f;
  c.shard_sizes = {256};
  LinearProblem p = LinearProblem::from_canonical(c);
  EXPECT_EQ(p.scheme, WeightScheme::kFp8);
  EXPECT_EQ(p.fp8_weight, Fp8WeightGranularity::kBlock);
  EXPECT_EQ(p.block_n, 128);
  EXPECT_EQ(p.block_k, 128);
  EXPECT_EQ(p.act_quant, ActQuant::kDynamicGroup);
  EXPECT_EQ(p.fp8_mode, Fp8Mode::kNone);  // the selector decides
  EXPECT_TRUE(p.has_bias);

  DenseWeights d;
  d.K = 32;
  d.N = 16;
  d.dtype = DType::kF16;
  d.data.resize(32 * 16 * 2);
  c.weights = d;
  c.name = "lm_head";
  c.shard_sizes = {16};
  p = LinearProblem::from_canonical(c);
  EXPECT_EQ(p.scheme, WeightScheme::kDense);
  EXPECT_EQ(p.weight_dtype, DType::kF16);
  EXPECT_EQ(p.K, 32);
  EXPECT_EQ(p.N, 16);
  EXPECT_FALSE(p.has_bias);
}

}  // namespace
}  // namespace qlinear
