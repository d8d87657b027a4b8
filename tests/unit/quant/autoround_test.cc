// AutoRound config parsing (formats.md §1.4): packing choice, extra_config, block lists.
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

constexpr const char* kLayer = "model.layers.0.mlp.up_proj";

TEST(AutoRound, AllMethodSpellingsAreAutoRound) {
  for (const char* method : {"auto-round", "auto_round", "intel/auto-round", "Intel/Auto-Round"}) {
    auto config = parse_ok(std::string(R"({"bits": 4, "group_size": 128, "quant_method": ")") +
                           method + "\"}");
    ASSERT_NE(config, nullptr) << method;
    EXPECT_EQ(config->format(), QuantFormat::kAutoRound);
  }
}

TEST(AutoRound, DefaultsAreSymmetricGptqPackedV1) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  ASSERT_TRUE(spec.quantized);
  EXPECT_EQ(spec.int_spec->bits, 4);
  EXPECT_EQ(spec.int_spec->group_size, 128);
  EXPECT_TRUE(spec.int_spec->sym);
  EXPECT_EQ(spec.int_spec->packing, IntPacking::kGptq);
  EXPECT_EQ(spec.int_spec->zero_format, GptqZeroFormat::kV1);
}

TEST(AutoRound, PackingFormatSelectsAwq) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": -1,
                             "sym": false, "packing_format": "auto_round:auto_awq"})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.int_spec->packing, IntPacking::kAwq);
  EXPECT_EQ(spec.int_spec->group_size, -1);
  EXPECT_FALSE(spec.int_spec->sym);
}

TEST(AutoRound, GptqWinsWhenBothGptqAndAwqOccur) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
                             "packing_format": "auto_round:auto_awq", "backend": "gptq:marlin"})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(resolve_ok(*config, kLayer).int_spec->packing, IntPacking::kGptq);
  auto by_backend = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
                                 "packing_format": "auto_round", "backend": "awq"})");
  ASSERT_NE(by_backend, nullptr);
  EXPECT_EQ(resolve_ok(*by_backend, kLayer).int_spec->packing, IntPacking::kAwq);
}

TEST(AutoRound, EightBitAwqPackingIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto-round", "bits": 8, "group_size": 128,
                               "packing_format": "auto_round:auto_awq"})"),
                     ErrorCode::kUnsupported, "\"bits\" = 8", "auto_awq");
}

TEST(AutoRound, ThreeBitsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto-round", "bits": 3, "group_size": 128})"),
                     ErrorCode::kUnsupported, "\"bits\" = 3", "32/3");
}

TEST(AutoRound, FloatDataTypesAreRejectedByName) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto-round", "bits": 8, "group_size": 128,
                               "data_type": "fp8"})"),
                     ErrorCode::kUnsupported, "\"data_type\"", "fp8");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto_round:fp8", "bits": 8,
                               "group_size": 128})"),
                     ErrorCode::kUnsupported, "auto_round:fp8");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto-round", "bits": 8,
                               "group_size": [128, 128]})"),
                     ErrorCode::kUnsupported, "\"group_size\"", "block");
}

TEST(AutoRound, SixteenBitsMeansUnquantized) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 16, "group_size": 128,
                             "data_type": "float"})");
  ASSERT_NE(config, nullptr);
  EXPECT_FALSE(resolve_ok(*config, kLayer).quantized);
}

TEST(AutoRound, LmHeadNotQuantizedByDefault) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128})");
  ASSERT_NE(config, nullptr);
  QuantSpec head = resolve_ok(*config, "lm_head");
  EXPECT_FALSE(head.quantized);
  EXPECT_THAT(head.skip_reason, ::testing::HasSubstr("LM head"));
}

TEST(AutoRound, ExactExtraConfigEntryOverridesAndDefaultsToGlobal) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "extra_config": {
      "model.layers.0.mlp.down_proj": {"bits": 8},
      "model.layers.0.self_attn.o_proj": {"bits": 16, "data_type": "float"},
      "lm_head": {"bits": 4, "group_size": 32}
    }})");
  ASSERT_NE(config, nullptr);
  QuantSpec down = resolve_ok(*config, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(down.int_spec->bits, 8);
  EXPECT_EQ(down.int_spec->group_size, 128);  // missing: global
  QuantSpec o_proj = resolve_ok(*config, "model.layers.0.self_attn.o_proj");
  EXPECT_FALSE(o_proj.quantized);
  EXPECT_THAT(o_proj.skip_reason, ::testing::HasSubstr("extra_config"));
  QuantSpec head = resolve_ok(*config, "lm_head");  // an exact entry beats the LM-head default
  ASSERT_TRUE(head.quantized);
  EXPECT_EQ(head.int_spec->group_size, 32);
  EXPECT_EQ(resolve_ok(*config, "model.layers.1.mlp.down_proj").int_spec->bits, 4);
}

TEST(AutoRound, ModelPrefixedExactEntry) {
  // Entries written with "model." in front of the layer name apply too.
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "extra_config": {"model.visual.merger.mlp.0": {"bits": 16}}})");
  ASSERT_NE(config, nullptr);
  EXPECT_FALSE(resolve_ok(*config, "visual.merger.mlp.0").quantized);
  EXPECT_TRUE(config->skip_entry("visual.merger.mlp.0").has_value());
}

TEST(AutoRound, RegexEntriesSearchAnywhere) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "extra_config": {
      "mlp\\.down_proj$": {"bits": 8, "sym": false},
      ".*gate.*": {"bits": 16}
    }})");
  ASSERT_NE(config, nullptr);
  QuantSpec down = resolve_ok(*config, "model.layers.7.mlp.down_proj");
  EXPECT_EQ(down.int_spec->bits, 8);
  EXPECT_FALSE(down.int_spec->sym);
  EXPECT_FALSE(resolve_ok(*config, "model.layers.7.mlp.gate_proj").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.7.mlp.up_proj").quantized);
}

TEST(AutoRound, InvalidRegexKeysAreIgnored) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "extra_config": {"up_proj[": {"bits": 16}}})");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, kLayer).quantized);
}

TEST(AutoRound, BlockNameToQuantizeAsString) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "block_name_to_quantize": "model.language_model.layers, model.mtp.layers"})");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, "model.language_model.layers.0.mlp.up_proj").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.mtp.layers.0.mlp.up_proj").quantized);
  QuantSpec vision = resolve_ok(*config, "model.visual.blocks.0.mlp.fc1");
  EXPECT_FALSE(vision.quantized);
  EXPECT_THAT(vision.skip_reason, ::testing::HasSubstr("block_name_to_quantize"));
}

TEST(AutoRound, ToQuantBlockNamesAsList) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
    "to_quant_block_names": ["model.layers"]})");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.3.mlp.up_proj").quantized);
  // Starts-with, not substring: a block name in the middle of the name does not count.
  EXPECT_FALSE(resolve_ok(*config, "vision.model.layers.3.mlp.up_proj").quantized);
}

TEST(AutoRound, CheckpointFormatV2) {
  auto config = parse_ok(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
                             "checkpoint_format": "gptq_v2"})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(resolve_ok(*config, kLayer).int_spec->zero_format, GptqZeroFormat::kV2);
}

TEST(AutoRound, ExtraConfigBitsAreValidated) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "auto-round", "bits": 4, "group_size": 128,
                               "extra_config": {"model.layers.0.mlp.up_proj": {"bits": 3}}})"),
                     ErrorCode::kUnsupported, "extra_config[\"model.layers.0.mlp.up_proj\"].bits",
                     "32/3");
}

}  // namespace
}  // namespace qlinear::quant_test
