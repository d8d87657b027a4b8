// GPTQ config parsing (formats.md §1.2): bits, zero formats, act-order, dynamic overrides,
// modules_in_block_to_quantize, lm_head.
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

constexpr const char* kLayer = "model.layers.0.self_attn.q_proj";

TEST(Gptq, DefaultsAreSymmetricV1) {
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                             "desc_act": false})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kGptq);
  QuantSpec spec = resolve_ok(*config, kLayer);
  ASSERT_TRUE(spec.quantized);
  ASSERT_TRUE(spec.int_spec.has_value());
  EXPECT_EQ(spec.int_spec->bits, 4);
  EXPECT_EQ(spec.int_spec->group_size, 128);
  EXPECT_TRUE(spec.int_spec->sym);
  EXPECT_FALSE(spec.int_spec->act_order);
  EXPECT_EQ(spec.int_spec->packing, IntPacking::kGptq);
  EXPECT_EQ(spec.int_spec->zero_format, GptqZeroFormat::kV1);
}

TEST(Gptq, CheckpointFormatSelectsZeroConvention) {
  auto v1 = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "checkpoint_format": "gptq"})");
  auto v2 = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "checkpoint_format": "gptq_v2", "sym": false})");
  ASSERT_NE(v1, nullptr);
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(resolve_ok(*v1, kLayer).int_spec->zero_format, GptqZeroFormat::kV1);
  QuantSpec spec = resolve_ok(*v2, kLayer);
  EXPECT_EQ(spec.int_spec->zero_format, GptqZeroFormat::kV2);
  EXPECT_FALSE(spec.int_spec->sym);
}

TEST(Gptq, MarlinCheckpointFormatIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                               "checkpoint_format": "marlin"})"),
                     ErrorCode::kUnsupported, "\"checkpoint_format\" = \"marlin\"", "Marlin tiles");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                               "checkpoint_format": "gptq_v9"})"),
                     ErrorCode::kUnsupported, "\"gptq_v9\"");
}

TEST(Gptq, BitsTwoFourEightAccepted) {
  for (int bits : {2, 4, 8}) {
    auto config = parse_ok(R"({"quant_method": "gptq", "group_size": 64, "bits": )" +
                           std::to_string(bits) + "}");
    ASSERT_NE(config, nullptr) << bits;
    EXPECT_EQ(resolve_ok(*config, kLayer).int_spec->bits, bits);
  }
}

TEST(Gptq, ThreeBitsRejectedNamingKeyValueAndRule) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 3, "group_size": 128})"),
                     ErrorCode::kUnsupported, "config.json:quantization_config", "\"bits\" = 3",
                     "32/3 is not an integer pack factor");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 5, "group_size": 128})"),
                     ErrorCode::kUnsupported, "\"bits\" = 5");
}

TEST(Gptq, DescActGivesActOrderExceptChannelwise) {
  auto grouped = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                              "desc_act": true})");
  auto channel = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": -1,
                              "desc_act": true})");
  ASSERT_NE(grouped, nullptr);
  ASSERT_NE(channel, nullptr);
  EXPECT_TRUE(resolve_ok(*grouped, kLayer).int_spec->act_order);
  QuantSpec spec = resolve_ok(*channel, kLayer);
  EXPECT_EQ(spec.int_spec->group_size, -1);
  EXPECT_FALSE(spec.int_spec->act_order);
}

TEST(Gptq, LegacyQuantizeConfigWithoutQuantMethod) {
  auto config = parse_ok(R"({"bits": 8, "group_size": 128, "desc_act": false, "sym": true,
                             "damp_percent": 0.01, "true_sequential": true})");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kGptq);
  EXPECT_EQ(resolve_ok(*config, kLayer).int_spec->bits, 8);
}

TEST(Gptq, DynamicFirstMatchInInsertionOrderWins) {
  // Both keys match layer 1; the one written first decides, although "+:" sorts before "-:"
  // and "model" sorts after ".*" alphabetically.
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
    "dynamic": {
      "model\\.layers\\.1\\..*": {"bits": 8, "group_size": 32},
      "-:.*layers\\.1\\..*": {},
      "+:.*down_proj": {"bits": 2, "sym": false, "desc_act": true}
    }})");
  ASSERT_NE(config, nullptr);
  QuantSpec layer1 = resolve_ok(*config, "model.layers.1.mlp.down_proj");
  ASSERT_TRUE(layer1.quantized);
  EXPECT_EQ(layer1.int_spec->bits, 8);
  EXPECT_EQ(layer1.int_spec->group_size, 32);
  EXPECT_TRUE(layer1.int_spec->sym);  // not overridden: global
  QuantSpec layer2 = resolve_ok(*config, "model.layers.2.mlp.down_proj");
  EXPECT_EQ(layer2.int_spec->bits, 2);
  EXPECT_FALSE(layer2.int_spec->sym);
  EXPECT_TRUE(layer2.int_spec->act_order);
  EXPECT_EQ(layer2.int_spec->group_size, 128);
  QuantSpec other = resolve_ok(*config, "model.layers.2.mlp.up_proj");
  EXPECT_EQ(other.int_spec->bits, 4);
}

TEST(Gptq, DynamicNegativeRuleSkipsTheModule) {
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
    "dynamic": {"-:model\\.layers\\.0\\.": {}}})");
  ASSERT_NE(config, nullptr);
  QuantSpec skipped = resolve_ok(*config, "model.layers.0.mlp.up_proj");
  EXPECT_FALSE(skipped.quantized);
  EXPECT_THAT(skipped.skip_reason, ::testing::HasSubstr("-:model"));
  EXPECT_TRUE(resolve_ok(*config, "model.layers.10.mlp.up_proj").quantized);
  EXPECT_TRUE(config->skip_entry("model.layers.0.mlp.gate_up_proj").has_value());
}

TEST(Gptq, DynamicIsAnchoredAtTheStart) {
  // "layers\.0\." occurs inside the name but not at its start: re.match does not match.
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
    "dynamic": {"-:layers\\.0\\.": {}, "mlp": {"bits": 8}}})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, "model.layers.0.mlp.up_proj");
  EXPECT_TRUE(spec.quantized);
  EXPECT_EQ(spec.int_spec->bits, 4);
  // Start-anchored, not a full match: a prefix pattern matches the longer name.
  auto prefix = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
    "dynamic": {"model\\.layers\\.0": {"bits": 8}}})");
  ASSERT_NE(prefix, nullptr);
  EXPECT_EQ(resolve_ok(*prefix, "model.layers.0.mlp.up_proj").int_spec->bits, 8);
}

TEST(Gptq, DynamicOverridesAreValidated) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                               "dynamic": {".*": {"bits": 3}}})"),
                     ErrorCode::kUnsupported, "dynamic[\".*\"].bits", "32/3");
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                               "dynamic": {"-:(": {}}})"),
                     ErrorCode::kInvalidArgument, "\"dynamic\"", "\"-:(\"");
}

TEST(Gptq, ModulesInBlockToQuantizeMatchesBySubstring) {
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
    "modules_in_block_to_quantize": [["self_attn.k_proj", "self_attn.v_proj",
                                      "self_attn.q_proj"], ["mlp.up_proj"]]})");
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.4.self_attn.k_proj").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.4.mlp.up_proj").quantized);
  QuantSpec down = resolve_ok(*config, "model.layers.4.mlp.down_proj");
  EXPECT_FALSE(down.quantized);
  EXPECT_THAT(down.skip_reason, ::testing::HasSubstr("modules_in_block_to_quantize"));
  // Not an explicit skip entry: fused names are not skipped wholesale for being unlisted.
  EXPECT_FALSE(config->skip_entry("model.layers.4.self_attn.qkv_proj").has_value());
}

TEST(Gptq, WithoutModuleListTheTensorsDecide) {
  TensorCatalog tensors;
  tensors.add("model.layers.0.mlp.down_proj.qweight", DType::kI32);
  tensors.add("model.layers.0.mlp.gate.weight", DType::kBF16);
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", tensors);
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.0.mlp.down_proj").quantized);
  QuantSpec gate = resolve_ok(*config, "model.layers.0.mlp.gate");
  EXPECT_FALSE(gate.quantized);
  EXPECT_THAT(gate.skip_reason, ::testing::HasSubstr("qweight"));
}

TEST(Gptq, LmHeadFlag) {
  auto dense_head = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128})");
  auto quant_head = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                                 "lm_head": true})");
  ASSERT_NE(dense_head, nullptr);
  ASSERT_NE(quant_head, nullptr);
  EXPECT_FALSE(resolve_ok(*dense_head, "lm_head").quantized);
  EXPECT_TRUE(resolve_ok(*quant_head, "lm_head").quantized);
}

TEST(Gptq, LmHeadFalseButQuantizedTensorIsMisconfigured) {
  TensorCatalog tensors;
  tensors.add("lm_head.qweight", DType::kI32);
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", tensors);
  ASSERT_NE(config, nullptr);
  EXPECT_QUANT_ERROR(config->resolve("lm_head"), ErrorCode::kMisconfigured, "lm_head.qweight",
                     "\"lm_head\"");
}

TEST(Gptq, MissingGroupSizeIsAnError) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "gptq", "bits": 4})"), ErrorCode::kNotFound,
                     "group_size");
}

}  // namespace
}  // namespace qlinear::quant_test
