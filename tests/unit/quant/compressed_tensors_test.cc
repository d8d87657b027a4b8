// compressed-tensors config parsing (formats.md §1.3, §2, §3.1).
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

constexpr const char* kLayer = "model.layers.0.mlp.up_proj";

std::string with_group(const std::string& group, const std::string& extra = "") {
  return R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": )" + group + "}" +
         extra + "}";
}

const std::string kW4A16Sym = R"({"targets": ["Linear"], "format": "pack-quantized",
  "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
              "group_size": 128, "actorder": null, "dynamic": false},
  "input_activations": null, "output_activations": null})";

TEST(CompressedTensors, PackQuantizedSymmetricGroup) {
  auto config = parse_ok(with_group(kW4A16Sym));
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->format(), QuantFormat::kCompressedTensors);
  QuantSpec spec = resolve_ok(*config, kLayer);
  ASSERT_TRUE(spec.quantized);
  ASSERT_TRUE(spec.int_spec.has_value());
  EXPECT_EQ(spec.int_spec->bits, 4);
  EXPECT_EQ(spec.int_spec->group_size, 128);
  EXPECT_TRUE(spec.int_spec->sym);
  EXPECT_FALSE(spec.int_spec->act_order);
  EXPECT_EQ(spec.int_spec->packing, IntPacking::kCtPacked);
}

TEST(CompressedTensors, GlobalFormatApplies) {
  auto config = parse_ok(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "int", "symmetric": false, "strategy": "channel"}}}})");
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.int_spec->bits, 8);
  EXPECT_EQ(spec.int_spec->group_size, -1);  // channel strategy: one group over K
  EXPECT_FALSE(spec.int_spec->sym);
}

TEST(CompressedTensors, ActorderGroupMeansActOrder) {
  auto group = parse_ok(with_group(R"({"targets": ["Linear"], "format": "pack-quantized",
    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 64,
                "actorder": "group"}})"));
  auto weight = parse_ok(with_group(R"({"targets": ["Linear"], "format": "pack-quantized",
    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 64,
                "actorder": "weight"}})"));
  ASSERT_NE(group, nullptr);
  ASSERT_NE(weight, nullptr);
  EXPECT_TRUE(resolve_ok(*group, kLayer).int_spec->act_order);
  EXPECT_FALSE(resolve_ok(*weight, kLayer).int_spec->act_order);
}

TEST(CompressedTensors, GroupStrategyNeedsPositiveGroupSize) {
  EXPECT_QUANT_ERROR(parse(with_group(R"({"targets": ["Linear"], "format": "pack-quantized",
    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": -1}})")),
                     ErrorCode::kInvalidArgument, "config_groups.group_0.weights.group_size", "-1",
                     "\"channel\"");
}

TEST(CompressedTensors, PackQuantizedRejectsOtherBits) {
  EXPECT_QUANT_ERROR(parse(with_group(R"({"targets": ["Linear"], "format": "pack-quantized",
    "weights": {"num_bits": 2, "type": "int", "strategy": "channel"}})")),
                     ErrorCode::kUnsupported, "num_bits = 2", "group_0");
}

TEST(CompressedTensors, IgnoreExactAndRegex) {
  auto config = parse_ok(with_group(kW4A16Sym,
                                    R"(, "ignore": ["lm_head", "re:.*mlp\\.gate$",
                                                    "re:layers\\.1\\."])"));
  ASSERT_NE(config, nullptr);
  QuantSpec head = resolve_ok(*config, "lm_head");
  EXPECT_FALSE(head.quantized);
  EXPECT_THAT(head.skip_reason, ::testing::HasSubstr("ignore"));
  EXPECT_FALSE(resolve_ok(*config, "model.layers.3.mlp.gate").quantized);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.3.mlp.gate_proj").quantized);
  // Exact, not substring: "lm_head" does not ignore a longer name.
  EXPECT_TRUE(resolve_ok(*config, "model.lm_head_adapter").quantized);
  // re: is anchored at the start: "layers\.1\." occurs mid-name, so it does not match.
  EXPECT_TRUE(resolve_ok(*config, "model.layers.1.mlp.up_proj").quantized);
}

TEST(CompressedTensors, InvalidIgnoreRegexIsAnError) {
  EXPECT_QUANT_ERROR(parse(with_group(kW4A16Sym, R"(, "ignore": ["re:(unclosed"])")),
                     ErrorCode::kInvalidArgument, "ignore", "re:(unclosed");
}

TEST(CompressedTensors, TargetsByNameRegexAndClass) {
  auto config = parse_ok(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {
      "by_class": {"targets": ["Linear"],
                   "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}},
      "by_regex": {"targets": ["re:.*down_proj"],
                   "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}},
      "by_name": {"targets": ["model.layers.0.mlp.down_proj"],
                  "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}}
    }})");
  ASSERT_NE(config, nullptr);
  // Exact name beats regex beats class name, whatever the group order.
  EXPECT_EQ(resolve_ok(*config, "model.layers.0.mlp.down_proj").int_spec->group_size, 32);
  EXPECT_EQ(resolve_ok(*config, "model.layers.1.mlp.down_proj").int_spec->bits, 8);
  EXPECT_EQ(resolve_ok(*config, "model.layers.1.mlp.up_proj").int_spec->group_size, 128);
}

TEST(CompressedTensors, UntargetedLayersStayDense) {
  auto config = parse_ok(with_group(R"({"targets": ["re:.*self_attn\\..*"],
    "format": "pack-quantized",
    "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}})"));
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, "model.layers.0.self_attn.o_proj").quantized);
  QuantSpec mlp = resolve_ok(*config, kLayer);
  EXPECT_FALSE(mlp.quantized);
  EXPECT_THAT(mlp.skip_reason, ::testing::HasSubstr("targets"));
}

TEST(CompressedTensors, ClassTargetIsCaseInsensitive) {
  auto config = parse_ok(with_group(R"({"targets": ["linear"], "format": "pack-quantized",
    "weights": {"num_bits": 4, "type": "int", "strategy": "channel"}})"));
  ASSERT_NE(config, nullptr);
  EXPECT_TRUE(resolve_ok(*config, kLayer).quantized);
}

// The three llm-compressor FP8 presets as they appear expanded in config.json (formats.md §3.1).
TEST(CompressedTensors, Fp8PresetStaticTensor) {
  auto config = parse_ok(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "tensor",
                "dynamic": false},
    "input_activations": {"num_bits": 8, "type": "float", "symmetric": true,
                          "strategy": "tensor", "dynamic": false}})"));
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  ASSERT_TRUE(spec.fp8_spec.has_value());
  EXPECT_FALSE(spec.int_spec.has_value());
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kTensor);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kStaticTensor);
  EXPECT_EQ(spec.fp8_spec->scale_name, "weight_scale");
  EXPECT_FALSE(spec.fp8_spec->online);
}

TEST(CompressedTensors, Fp8DynamicPreset) {
  auto config = parse_ok(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel",
                "dynamic": false},
    "input_activations": {"num_bits": 8, "type": "float", "symmetric": true,
                          "strategy": "token", "dynamic": true}})"));
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kChannel);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kDynamicToken);
}

TEST(CompressedTensors, Fp8BlockPreset) {
  auto config = parse_ok(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "block",
                "block_structure": [128, 64], "dynamic": false},
    "input_activations": {"num_bits": 8, "type": "float", "symmetric": true,
                          "strategy": "group", "group_size": 64, "dynamic": true}})"));
  ASSERT_NE(config, nullptr);
  QuantSpec spec = resolve_ok(*config, kLayer);
  EXPECT_EQ(spec.fp8_spec->weight, Fp8WeightGranularity::kBlock);
  EXPECT_EQ(spec.fp8_spec->block_n, 128);
  EXPECT_EQ(spec.fp8_spec->block_k, 64);
  EXPECT_EQ(spec.fp8_spec->activation, ActQuant::kDynamicGroup);
  EXPECT_EQ(spec.fp8_spec->scale_name, "weight_scale");
}

TEST(CompressedTensors, Fp8WeightOnlyAndDynamicTensor) {
  auto w8a16 = parse_ok(with_group(R"({"targets": ["Linear"], "format": "naive-quantized",
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": null})"));
  auto per_tensor = parse_ok(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor",
                          "dynamic": true}})"));
  ASSERT_NE(w8a16, nullptr);
  ASSERT_NE(per_tensor, nullptr);
  EXPECT_EQ(resolve_ok(*w8a16, kLayer).fp8_spec->activation, ActQuant::kNone);
  EXPECT_EQ(resolve_ok(*per_tensor, kLayer).fp8_spec->activation, ActQuant::kDynamicTensor);
}

TEST(CompressedTensors, NamedPresetGroups) {
  // compressed-tensors also accepts {"<PRESET>": [targets]}.
  auto dynamic = parse_ok(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"FP8_DYNAMIC": ["Linear"]}})");
  auto block = parse_ok(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"FP8_BLOCK": ["Linear"]}})");
  auto fp8 = parse_ok(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"FP8": ["Linear"]}})");
  auto w4a16 = parse_ok(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"W4A16": ["Linear"]}})");
  ASSERT_NE(dynamic, nullptr);
  ASSERT_NE(block, nullptr);
  ASSERT_NE(fp8, nullptr);
  ASSERT_NE(w4a16, nullptr);
  QuantSpec d = resolve_ok(*dynamic, kLayer);
  EXPECT_EQ(d.fp8_spec->weight, Fp8WeightGranularity::kChannel);
  EXPECT_EQ(d.fp8_spec->activation, ActQuant::kDynamicToken);
  QuantSpec b = resolve_ok(*block, kLayer);
  EXPECT_EQ(b.fp8_spec->weight, Fp8WeightGranularity::kBlock);
  EXPECT_EQ(b.fp8_spec->block_n, 128);
  EXPECT_EQ(b.fp8_spec->block_k, 128);
  EXPECT_EQ(b.fp8_spec->activation, ActQuant::kDynamicGroup);
  QuantSpec t = resolve_ok(*fp8, kLayer);
  EXPECT_EQ(t.fp8_spec->weight, Fp8WeightGranularity::kTensor);
  EXPECT_EQ(t.fp8_spec->activation, ActQuant::kStaticTensor);
  QuantSpec w = resolve_ok(*w4a16, kLayer);
  EXPECT_EQ(w.int_spec->bits, 4);
  EXPECT_EQ(w.int_spec->group_size, 128);
  EXPECT_TRUE(w.int_spec->sym);
}

TEST(CompressedTensors, StaticInputWithBlockWeightsIsRejected) {
  EXPECT_QUANT_ERROR(parse(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor",
                          "dynamic": false}})")),
                     ErrorCode::kUnsupported, "group_0.input_activations", "static");
}

TEST(CompressedTensors, BlockWithoutStructureIsRejected) {
  EXPECT_QUANT_ERROR(parse(with_group(R"({"targets": ["Linear"], "format": "float-quantized",
    "weights": {"num_bits": 8, "type": "float", "strategy": "block"}})")),
                     ErrorCode::kInvalidArgument, "block_structure");
}

TEST(CompressedTensors, UnsupportedFormatsAreNamed) {
  for (const char* format : {"int-quantized", "nvfp4-pack-quantized", "mxfp8-quantized"}) {
    auto result = parse(with_group(std::string(R"({"targets": ["Linear"], "format": ")") + format +
                                   R"(", "weights": {"num_bits": 8, "type": "int",
                                   "strategy": "channel"}})"));
    EXPECT_QUANT_ERROR(result, ErrorCode::kUnsupported, "unsupported compressed-tensors format",
                       "group_0");
    EXPECT_THAT(result.status().message(), ::testing::HasSubstr(format));
  }
}

TEST(CompressedTensors, UnknownPresetNameIsRejected) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "compressed-tensors",
    "config_groups": {"NVFP4": ["Linear"]}})"),
                     ErrorCode::kUnsupported, "NVFP4");
}

TEST(CompressedTensors, MissingConfigGroupsIsAnError) {
  EXPECT_QUANT_ERROR(parse(R"({"quant_method": "compressed-tensors"})"), ErrorCode::kNotFound,
                     "config_groups");
}

}  // namespace
}  // namespace qlinear::quant_test
