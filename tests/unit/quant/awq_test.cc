// AWQ config parsing (formats.md §1.1, §2): keys, aliases, version gate, skip rules.
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

TEST(Awq, GemmConfigGivesAwqPackedFourBitLayers) {
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "zero_point": true, "version": "gemm"})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kAwq);
  QuantSpec spec = resolve_ok(*config, "model.layers.0.mlp.down_proj");
  ASSERT_TRUE(spec.quantized);
  ASSERT_TRUE(spec.int_spec.has_value());
  EXPECT_EQ(spec.int_spec->bits, 4);
  EXPECT_EQ(spec.int_spec->group_size, 128);
  EXPECT_FALSE(spec.int_spec->sym);  // zero_point=true: real asymmetric zeros
  EXPECT_FALSE(spec.int_spec->act_order);
  EXPECT_EQ(spec.int_spec->packing, IntPacking::kAwq);
  EXPECT_FALSE(spec.fp8_spec.has_value());
}

TEST(Awq, OldAutoAwqKeysWBitAndQGroupSize) {
  auto config = parse_ok(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64,
                             "zero_point": false, "version": "GEMM"})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, "model.layers.0.self_attn.o_proj");
  ASSERT_TRUE(spec.int_spec.has_value());
  EXPECT_EQ(spec.int_spec->group_size, 64);
  EXPECT_TRUE(spec.int_spec->sym);  // zero_point=false
}

TEST(Awq, LegacyFileWithoutQuantMethodIsAwq) {
  auto config = parse_ok(R"({"w_bit": 4, "q_group_size": 128, "zero_point": true,
                             "version": "gemm"})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kAwq);
}

TEST(Awq, ChannelwiseGroupSizeMinusOneIsAccepted) {
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": -1})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(resolve_ok(*config, "model.layers.0.mlp.up_proj").int_spec->group_size, -1);
}

TEST(Awq, ZeroGroupSizeIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 0})"),
                     ErrorCode::kInvalidArgument, "\"group_size\"", "0");
}

TEST(Awq, EightBitIsRejectedWithReason) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 8, "group_size": 128})"),
                     ErrorCode::kUnsupported, "config.json:quantization_config", "\"bits\" = 8",
                     "4-bit");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "w_bit": 8, "q_group_size": 128})"),
                     ErrorCode::kUnsupported, "\"w_bit\" = 8");
}

TEST(Awq, ThreeBitIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 3, "group_size": 128})"),
                     ErrorCode::kUnsupported, "\"bits\" = 3");
}

TEST(Awq, MissingBitsIsAnError) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "group_size": 128})"), ErrorCode::kNotFound,
                     "bits", "w_bit");
}

TEST(Awq, NonGemmVersionsAreRejectedWithTheirLayout) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                               "version": "gemv"})"),
                     ErrorCode::kUnsupported, "\"version\" = \"gemv\"", "[N, K/8]");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                               "version": "GEMV_FAST"})"),
                     ErrorCode::kUnsupported, "\"GEMV_FAST\"", "gemv_fast");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                               "version": "Marlin"})"),
                     ErrorCode::kUnsupported, "\"Marlin\"", "no qzeros");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                               "version": "exllama"})"),
                     ErrorCode::kUnsupported, "\"exllama\"", "unknown AWQ version");
}

TEST(Awq, VersionIsCaseInsensitive) {
  EXPECT_TRUE(parse(R"({"quant_method": "AWQ", "bits": 4, "group_size": 128,
                        "version": "Gemm"})")
                  .ok());
}

TEST(Awq, ModulesToNotConvertMatchesBySubstring) {
  // Issue #21669: exact matching quantized short names such as linear_attn.in_proj_qkv.
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": ["linear_attn.in_proj_qkv", "visual"]})");
  ASSERT_NE(config, nullptr);
  QuantSpec skipped = resolve_ok(*config, "model.layers.3.linear_attn.in_proj_qkv");
  EXPECT_FALSE(skipped.quantized);
  EXPECT_THAT(skipped.skip_reason, ::testing::HasSubstr("modules_to_not_convert"));
  EXPECT_THAT(skipped.skip_reason, ::testing::HasSubstr("linear_attn.in_proj_qkv"));
  EXPECT_FALSE(resolve_ok(*config, "visual.blocks.0.attn.proj").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.3.self_attn.q_proj").quantized);
  // The fused name is asked about too (formats.md §2 rule 1).
  EXPECT_TRUE(config->skip_entry("model.layers.3.linear_attn.in_proj_qkv").has_value());
  EXPECT_FALSE(config->skip_entry("model.layers.3.self_attn.qkv_proj").has_value());
}

TEST(Awq, WithoutSkipListFloatOnlyLayersAreNotConverted) {
  TensorCatalog tensors;
  tensors.add("model.layers.0.mlp.gate.weight", DType::kF16);
  tensors.add("model.layers.0.mlp.up_proj.qweight", DType::kI32);
  tensors.add("model.layers.0.mlp.up_proj.qzeros", DType::kI32);
  tensors.add("model.layers.0.mlp.up_proj.scales", DType::kF16);
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": null})",
                         tensors);
  ASSERT_NE(config, nullptr);
  QuantSpec gate = resolve_ok(*config, "model.layers.0.mlp.gate");
  EXPECT_FALSE(gate.quantized);
  EXPECT_THAT(gate.skip_reason, ::testing::HasSubstr("no qweight"));
  EXPECT_THAT(gate.skip_reason, ::testing::HasSubstr("f16"));
  EXPECT_TRUE(resolve_ok(*config, "model.layers.0.mlp.up_proj").quantized);
}

TEST(Awq, LmHeadIsDenseUnlessItHasQweight) {
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128})");
  ASSERT_NE(config, nullptr);
  EXPECT_FALSE(resolve_ok(*config, "lm_head").quantized);

  TensorCatalog tensors;
  tensors.add("lm_head.qweight", DType::kI32);
  auto quantized_head =
      parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128})", tensors);
  ASSERT_NE(quantized_head, nullptr);
  EXPECT_TRUE(resolve_ok(*quantized_head, "lm_head").quantized);
}

TEST(Awq, AliasesAwqMarlinAndAutoAwqReadTheSameData) {
  for (const char* method : {"awq_marlin", "auto_awq"}) {
    auto config = parse_ok(std::string(R"({"bits": 4, "group_size": 32, "quant_method": ")") +
                           method + "\"}");
    ASSERT_NE(config, nullptr) << method;
    EXPECT_EQ(config->format(), QuantFormat::kAwq);
    EXPECT_EQ(resolve_ok(*config, "model.layers.0.mlp.up_proj").int_spec->packing,
              IntPacking::kAwq);
  }
}

TEST(Awq, WrongTypeNamesKey) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": "4", "group_size": 128})"),
                     ErrorCode::kInvalidArgument, "\"bits\" = \"4\"", "integer");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                               "zero_point": 1})"),
                     ErrorCode::kInvalidArgument, "\"zero_point\" = 1");
}

}  // namespace
}  // namespace qlinear::quant_test
