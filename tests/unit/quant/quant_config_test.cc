// parse_quant_config_json dispatch (formats.md §1-§3): unknown methods, unquantized and online
// FP8 checkpoints, --quantization.
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

TEST(QuantConfig, UnknownQuantMethodNamesSourceKeyValueAndSupportedList) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "bitsandbytes", "bits": 4})"),
                     ErrorCode::kUnsupported, "config.json:quantization_config",
                     "\"quant_method\" = \"bitsandbytes\"", "awq", "gptq", "auto-round",
                     "compressed-tensors", "fp8");
}

TEST(QuantConfig, QuantMethodIsCaseInsensitive) {
  auto config = parse_ok(R"({"quant_method": "GPTQ", "bits": 4, "group_size": 128})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kGptq);
  auto ct = parse_ok(R"({"quant_method": "Compressed-Tensors", "format": "pack-quantized",
    "config_groups": {"W4A16": ["Linear"]}})");
  ASSERT_NE(ct, nullptr);
  EXPECT_EQ(ct->format(), QuantFormat::kCompressedTensors);
}

TEST(QuantConfig, UnrecognisableLegacyFileIsAnError) {
  EXPECT_QUANT_ERROR(parse(R"({"some_key": 1})"), ErrorCode::kInvalidArgument, "quant_method");
}

TEST(QuantConfig, NoConfigMeansEveryLayerDense) {
  auto config = parse_ok("null");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kUnquantized);
  for (const char* layer : {"model.layers.0.mlp.up_proj", "lm_head"}) {
    QuantSpec spec = resolve_ok(*config, layer);
    EXPECT_FALSE(spec.quantized);
    EXPECT_EQ(spec.format, QuantFormat::kUnquantized);
    EXPECT_EQ(spec.skip_reason, "checkpoint is not quantized");
  }
}

TEST(QuantConfig, OnlineFp8QuantizesEveryLinearButTheLmHead) {
  QuantOptions options;
  options.quantization = "fp8";
  options.online_ignore = {"model.layers.0.mlp.down_proj", "re:model\\.layers\\.1\\."};
  auto config = parse_ok("null", {}, options);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kOnlineFp8);
  QuantSpec spec = resolve_ok(*config, "model.layers.2.mlp.down_proj");
  ASSERT_TRUE(spec.quantized);
  EXPECT_EQ(spec.format, QuantFormat::kOnlineFp8);
  ASSERT_TRUE(spec.fp8_spec.has_value());
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kChannel);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kDynamicToken);
  EXPECT_TRUE(spec.fp8_spec->online);
  EXPECT_FALSE(resolve_ok(*config, "lm_head").quantized);
  EXPECT_FALSE(resolve_ok(*config, "model.layers.0.mlp.down_proj").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.0.mlp.up_proj").quantized);
  EXPECT_FALSE(resolve_ok(*config, "model.layers.1.self_attn.q_proj").quantized);
  // The regex is start-anchored.
  EXPECT_TRUE(resolve_ok(*config, "extra.model.layers.1.self_attn.q_proj").quantized);
}

TEST(QuantConfig, OnlineFp8OnQuantizedCheckpointIsAnError) {
  QuantOptions options;
  options.quantization = "fp8";
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128})", {}, options),
                     ErrorCode::kInvalidArgument, "--quantization fp8", "already quantized", "awq");
}

TEST(QuantConfig, OtherQuantizationValuesAreRejected) {
  QuantOptions options;
  options.quantization = "int8";
  EXPECT_QUANT_ERROR(parse("null", {}, options), ErrorCode::kInvalidArgument,
                     "--quantization \"int8\"", "\"fp8\"");
}

TEST(QuantConfig, InvalidOnlineIgnoreRegexIsAnError) {
  QuantOptions options;
  options.quantization = "fp8";
  options.online_ignore = {"re:[abc"};
  EXPECT_QUANT_ERROR(parse("null", {}, options), ErrorCode::kInvalidArgument, "re:[abc");
}

TEST(QuantConfig, SummaryNamesTheFormat) {
  auto awq = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128})");
  ASSERT_NE(awq, nullptr);
  EXPECT_THAT(awq->summary(), ::testing::StartsWith("awq bits=4 group=128"));
  auto gptq = parse_ok(R"({"quant_method": "gptq", "bits": 8, "group_size": 32})");
  ASSERT_NE(gptq, nullptr);
  EXPECT_THAT(gptq->summary(), ::testing::StartsWith("gptq bits=8 group=32"));
}

}  // namespace
}  // namespace qlinear::quant_test
