// quant_method "fp8" config parsing (formats.md §3.2).
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

constexpr const char* kLayer = "model.layers.0.self_attn.o_proj";

TEST(Fp8, StaticPerTensor) {
  auto config = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "static"})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kFp8);
  QuantSpec spec = resolve_ok(*config, kLayer);
  ASSERT_TRUE(spec.quantized);
  ASSERT_TRUE(spec.fp8_spec.has_value());
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kTensor);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kStaticTensor);
  EXPECT_EQ(spec.fp8_spec->scale_name, "weight_scale");
}

TEST(Fp8, DynamicPerTensorWeightsPerTokenActivations) {
  auto config = parse_ok(R"({"quant_method": "FP8", "activation_scheme": "dynamic"})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kTensor);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kDynamicToken);
}

TEST(Fp8, BlockWeightsUseWeightScaleInv) {
  auto config = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                             "fmt": "e4m3", "weight_block_size": [128, 64]})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kBlock);
  EXPECT_EQ(spec.fp8_spec->block_n, 128);
  EXPECT_EQ(spec.fp8_spec->block_k, 64);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kDynamicGroup);
  EXPECT_EQ(spec.fp8_spec->scale_name, "weight_scale_inv");
}

TEST(Fp8, BlockWithStaticActivationsIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "fp8", "activation_scheme": "static",
                               "weight_block_size": [128, 128]})"),
                     ErrorCode::kUnsupported, "\"activation_scheme\" = \"static\"",
                     "weight_block_size");
}

TEST(Fp8, BadActivationScheme) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "fp8", "activation_scheme": "per_token"})"),
                     ErrorCode::kInvalidArgument, "\"activation_scheme\" = \"per_token\"",
                     "\"static\" or \"dynamic\"");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "fp8"})"), ErrorCode::kNotFound,
                     "activation_scheme");
}

TEST(Fp8, WeightBlockSizeNeedsTwoPositiveElements) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                               "weight_block_size": [128]})"),
                     ErrorCode::kInvalidArgument, "\"weight_block_size\" = [128]", "two");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                               "weight_block_size": [128, 0]})"),
                     ErrorCode::kInvalidArgument, "\"weight_block_size\" = [128,0]");
}

TEST(Fp8, IgnoredLayersMatchBySubstring) {
  auto config = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                             "ignored_layers": ["mlp.gate", "lm_head"],
                             "modules_to_not_convert": ["self_attn"]})");
  ASSERT_NE(config, nullptr);
  QuantSpec gate = resolve_ok(*config, "model.layers.2.mlp.gate");
  EXPECT_FALSE(gate.quantized);
  EXPECT_THAT(gate.skip_reason, ::testing::HasSubstr("ignored_layers"));
  // ignored_layers wins over the fallback key, which is then not consulted.
  EXPECT_TRUE(resolve_ok(*config, kLayer).quantized);
}

TEST(Fp8, ModulesToNotConvertIsTheFallback) {
  auto config = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                             "modules_to_not_convert": ["self_attn"]})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_FALSE(spec.quantized);
  EXPECT_THAT(spec.skip_reason, ::testing::HasSubstr("modules_to_not_convert"));
}

TEST(Fp8, LmHeadDenseUnlessStoredAsFp8) {
  auto config = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})");
  ASSERT_NE(config, nullptr);
  EXPECT_FALSE(resolve_ok(*config, "lm_head").quantized);

  TensorCatalog tensors;
  tensors.add("lm_head.weight", DType::kF8E4M3);
  tensors.add("lm_head.weight_scale", DType::kF32);
  auto fp8_head = parse_ok(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})", tensors);
  ASSERT_NE(fp8_head, nullptr);
  EXPECT_TRUE(resolve_ok(*fp8_head, "lm_head").quantized);
}

}  // namespace
}  // namespace qlinear::quant_test
