// Linear-layer discovery, fusion, natural order and fused-shard agreement (formats.md §2).
#include "quant/layer_plan.h"

#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

std::vector<std::string> names_of(const std::vector<LinearLayer>& layers) {
  std::vector<std::string> names;
  for (const auto& layer : layers) names.push_back(layer.name);
  return names;
}

TEST(GroupLinearLayers, FusesCompleteShardSetsInNOrder) {
  auto layers = group_linear_layers({"m.layers.0.self_attn.v_proj", "m.layers.0.self_attn.k_proj",
                                     "m.layers.0.self_attn.q_proj", "m.layers.0.self_attn.o_proj",
                                     "m.layers.0.mlp.up_proj", "m.layers.0.mlp.gate_proj",
                                     "m.layers.0.mlp.down_proj"});
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(names_of(layers), (std::vector<std::string>{
                                  "m.layers.0.mlp.down_proj", "m.layers.0.mlp.gate_up_proj",
                                  "m.layers.0.self_attn.o_proj", "m.layers.0.self_attn.qkv_proj"}));
  EXPECT_EQ(layers[1].shards,
            (std::vector<std::string>{"m.layers.0.mlp.gate_proj", "m.layers.0.mlp.up_proj"}));
  EXPECT_EQ(layers[3].shards,
            (std::vector<std::string>{"m.layers.0.self_attn.q_proj", "m.layers.0.self_attn.k_proj",
                                      "m.layers.0.self_attn.v_proj"}));
  EXPECT_EQ(layers[0].shards, (std::vector<std::string>{"m.layers.0.mlp.down_proj"}));
}

TEST(GroupLinearLayers, IncompleteShardSetsStayUnfused) {
  auto layers = group_linear_layers({"a.q_proj", "a.k_proj", "b.gate_proj"});
  EXPECT_EQ(names_of(layers), (std::vector<std::string>{"a.k_proj", "a.q_proj", "b.gate_proj"}));
}

TEST(GroupLinearLayers, NaturalOrderComparesLayerIndicesAsNumbers) {
  auto layers = group_linear_layers({"m.layers.10.o", "m.layers.2.o", "m.layers.1.o", "lm_head"});
  EXPECT_EQ(names_of(layers),
            (std::vector<std::string>{"lm_head", "m.layers.1.o", "m.layers.2.o", "m.layers.10.o"}));
}

LinearLayer qkv_layer() {
  return LinearLayer{"model.layers.3.self_attn.qkv_proj",
                     {"model.layers.3.self_attn.q_proj", "model.layers.3.self_attn.k_proj",
                      "model.layers.3.self_attn.v_proj"},
                     {},
                     {}};
}

TEST(ResolveLinearLayer, AgreeingShardsGetOneSpecEach) {
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128})");
  ASSERT_NE(config, nullptr);
  LinearLayer layer = qkv_layer();
  ASSERT_TRUE(resolve_linear_layer(*config, &layer).ok());
  ASSERT_EQ(layer.specs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(layer.specs[i].layer, layer.shards[i]);
    EXPECT_TRUE(layer.specs[i].quantized);
  }
}

TEST(ResolveLinearLayer, OneSkippedShardIsAnErrorNamingLayerAndShards) {
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": ["self_attn.k_proj"]})");
  ASSERT_NE(config, nullptr);
  LinearLayer layer = qkv_layer();
  Status status = resolve_linear_layer(*config, &layer);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kMisconfigured);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("model.layers.3.self_attn.qkv_proj"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("q_proj is quantized (bits=4"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("k_proj is not"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("modules_to_not_convert"));
}

TEST(ResolveLinearLayer, DifferentBitsIsAnError) {
  auto config = parse_ok(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                             "dynamic": {".*v_proj": {"bits": 8}}})");
  ASSERT_NE(config, nullptr);
  LinearLayer layer = qkv_layer();
  Status status = resolve_linear_layer(*config, &layer);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kMisconfigured);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("model.layers.3.self_attn.qkv_proj"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("q_proj is bits=4"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("v_proj is bits=8"));
}

TEST(ResolveLinearLayer, FusedNameInSkipListSkipsEveryShard) {
  // Only the fused name is listed: per-shard resolution alone would quantize the shards.
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": ["layers.3.self_attn.qkv_proj"]})");
  ASSERT_NE(config, nullptr);
  LinearLayer layer = qkv_layer();
  ASSERT_TRUE(resolve_linear_layer(*config, &layer).ok());
  ASSERT_EQ(layer.specs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(layer.specs[i].quantized);
    EXPECT_EQ(layer.specs[i].layer, layer.shards[i]);
    EXPECT_THAT(layer.specs[i].skip_reason, ::testing::HasSubstr("qkv_proj"));
  }
}

TEST(ResolveLinearLayer, AllShardsSkippedAlikeIsFine) {
  auto config = parse_ok(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                             "modules_to_not_convert": ["layers.3."]})");
  ASSERT_NE(config, nullptr);
  LinearLayer layer = qkv_layer();
  ASSERT_TRUE(resolve_linear_layer(*config, &layer).ok());
  for (const auto& spec : layer.specs) EXPECT_FALSE(spec.quantized);
}

// --- checkpoint-level tests -------------------------------------------------------------------

// hidden 8 = 2 heads x 4, intermediate 16, vocab 32, 11 decoder layers (add_dense_block).
constexpr char kTinyLlama[] =
    R"("architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
       "intermediate_size": 16, "num_hidden_layers": 11, "num_attention_heads": 2,
       "num_key_value_heads": 2, "vocab_size": 32)";
constexpr char kPartialModel[] = R"("architectures": ["PartialForTest"])";

class CheckpointDir {
 public:
  explicit CheckpointDir(const std::string& name)
      : dir_(std::string(QLINEAR_TEST_TMPDIR) + "/quant_layer_plan_" + name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void tensor(const std::string& name, DType dtype, Shape shape) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype));
    writer_.add(name, dtype, std::move(shape), bytes);
  }
  // Writes config.json (with `quant_config` as quantization_config unless empty) and the tensors.
  // `model` is config.json's model keys: a complete tiny Llama by default; tests of partial
  // checkpoints name an architecture qlinear does not know, so only generic checks apply.
  Result<Checkpoint> open(const std::string& quant_config = "",
                          const std::string& model = kTinyLlama) {
    std::ofstream config(dir_ + "/config.json");
    config << "{" << model;
    if (!quant_config.empty()) config << ", \"quantization_config\": " << quant_config;
    config << "}";
    config.close();
    Status status = writer_.write(dir_ + "/model.safetensors");
    if (!status.ok()) return status;
    return Checkpoint::open(dir_);
  }

 private:
  std::string dir_;
  SafetensorsWriter writer_;
};

void add_dense_block(CheckpointDir* dir, int index) {
  const std::string p = "model.layers." + std::to_string(index) + ".";
  for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    dir->tensor(p + "self_attn." + proj + ".weight", DType::kBF16, {8, 8});
  }
  for (const char* proj : {"gate_proj", "up_proj"}) {
    dir->tensor(p + "mlp." + proj + ".weight", DType::kBF16, {16, 8});
  }
  dir->tensor(p + "mlp.down_proj.weight", DType::kBF16, {8, 16});
  dir->tensor(p + "input_layernorm.weight", DType::kBF16, {8});
  dir->tensor(p + "post_attention_layernorm.weight", DType::kBF16, {8});
}

TEST(PlanLinearLayers, DiscoversFusesAndOrdersDenseCheckpoint) {
  CheckpointDir dir("dense");
  dir.tensor("model.embed_tokens.weight", DType::kBF16, {32, 8});
  for (int index : {10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9}) add_dense_block(&dir, index);
  dir.tensor("model.norm.weight", DType::kBF16, {8});
  dir.tensor("lm_head.weight", DType::kBF16, {32, 8});
  auto checkpoint = dir.open();
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto layers = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();

  std::vector<std::string> expected = {"lm_head"};
  for (int index = 0; index <= 10; ++index) {  // natural order: layers.2 before layers.10
    const std::string p = "model.layers." + std::to_string(index) + ".";
    for (const char* leaf :
         {"mlp.down_proj", "mlp.gate_up_proj", "self_attn.o_proj", "self_attn.qkv_proj"}) {
      expected.push_back(p + leaf);
    }
  }
  EXPECT_EQ(names_of(*layers), expected);  // no embeddings, no norms
  for (const auto& layer : *layers) {
    ASSERT_EQ(layer.specs.size(), layer.shards.size());
    for (const auto& spec : layer.specs) {
      EXPECT_FALSE(spec.quantized);
      EXPECT_EQ(spec.skip_reason, "checkpoint is not quantized");
    }
  }
}

TEST(PlanLinearLayers, GptqCheckpointUsesQweightPrefixesAndOrderedDynamic) {
  CheckpointDir dir("gptq");
  const std::string p = "model.layers.0.mlp.";
  for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
    dir.tensor(p + proj + ".qweight", DType::kI32, {1, 16});
    dir.tensor(p + proj + ".qzeros", DType::kI32, {1, 2});
    dir.tensor(p + proj + ".scales", DType::kF16, {1, 16});
    dir.tensor(p + proj + ".g_idx", DType::kI32, {8});
  }
  dir.tensor("lm_head.weight", DType::kF16, {32, 8});
  // Written order matters: the first key matches down_proj; sorted order would pick "+:" first.
  auto checkpoint = dir.open(R"({"quant_method": "gptq", "bits": 4, "group_size": -1,
    "dynamic": {"model\\.layers\\.0\\.mlp\\.down": {"bits": 8}, "+:.*down": {"bits": 2}}})",
                             kPartialModel);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto layers = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  ASSERT_EQ(names_of(*layers), (std::vector<std::string>{"lm_head", "model.layers.0.mlp.down_proj",
                                                         "model.layers.0.mlp.gate_up_proj"}));
  EXPECT_FALSE((*layers)[0].specs[0].quantized);
  ASSERT_TRUE((*layers)[1].specs[0].quantized);
  EXPECT_EQ((*layers)[1].specs[0].int_spec->bits, 8);
  EXPECT_EQ((*layers)[2].specs[0].int_spec->bits, 4);
}

TEST(PlanLinearLayers, CompressedTensorsWeightPackedPrefixes) {
  CheckpointDir dir("ct");
  dir.tensor("model.layers.0.mlp.down_proj.weight_packed", DType::kI32, {8, 2});
  dir.tensor("model.layers.0.mlp.down_proj.weight_scale", DType::kBF16, {8, 1});
  dir.tensor("model.layers.0.mlp.down_proj.weight_shape", DType::kI64, {2});
  auto checkpoint = dir.open(R"({"quant_method": "compressed-tensors",
    "format": "pack-quantized", "config_groups": {"W4A16": ["Linear"]}})",
                             kPartialModel);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto layers = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  ASSERT_EQ(names_of(*layers), (std::vector<std::string>{"model.layers.0.mlp.down_proj"}));
  EXPECT_EQ((*layers)[0].specs[0].int_spec->packing, IntPacking::kCtPacked);
}

// Fusion is an optimisation, never a failure: shards quantized differently (here up_proj kept
// dense by the skip list) run as separate layers, each saying why.
TEST(PlanLinearLayers, DisagreeingShardsRunUnfusedWithTheReason) {
  CheckpointDir dir("disagree");
  add_dense_block(&dir, 0);
  auto checkpoint = dir.open(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                                 "modules_to_not_convert": ["mlp.up_proj"]})",
                             kPartialModel);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto layers = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  const std::vector<std::string> names = names_of(*layers);
  EXPECT_NE(std::find(names.begin(), names.end(), "model.layers.0.mlp.gate_proj"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "model.layers.0.mlp.up_proj"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "model.layers.0.mlp.gate_up_proj"), names.end());
  for (const LinearLayer& layer : *layers) {
    if (layer.name == "model.layers.0.mlp.up_proj") {
      EXPECT_FALSE(layer.specs[0].quantized);
      EXPECT_NE(layer.unfused_reason.find("not fused into gate_up_proj"), std::string::npos)
          << layer.unfused_reason;
      EXPECT_NE(layer.unfused_reason.find("up_proj"), std::string::npos);
    }
    if (layer.name == "model.layers.0.mlp.gate_proj") {
      EXPECT_TRUE(layer.specs[0].quantized);
      EXPECT_FALSE(layer.unfused_reason.empty());
    }
  }
}

// --- model-level validation (quant/validate_model.h) through plan_linear_layers ----------------

// A complete dense tiny Llama of `layers` decoder layers (hidden 8, vocab 32).
void add_tiny_llama(CheckpointDir* dir, int layers, bool lm_head = true) {
  dir->tensor("model.embed_tokens.weight", DType::kBF16, {32, 8});
  for (int i = 0; i < layers; ++i) add_dense_block(dir, i);
  dir->tensor("model.norm.weight", DType::kBF16, {8});
  if (lm_head) dir->tensor("lm_head.weight", DType::kBF16, {32, 8});
}

// Later keys win in config.json (JSON files may repeat keys), so `extra` can override.
std::string tiny_llama_config(int layers, const std::string& extra = "") {
  return R"("architectures": ["LlamaForCausalLM"], "hidden_size": 8, "intermediate_size": 16,
            "num_attention_heads": 2, "vocab_size": 32, "num_hidden_layers": )" +
         std::to_string(layers) + extra;
}

Result<std::vector<LinearLayer>> plan_status(CheckpointDir& dir, const std::string& model) {
  auto checkpoint = dir.open("", model);
  if (!checkpoint.ok()) return checkpoint.status();
  auto config = parse_quant_config(*checkpoint);
  if (!config.ok()) return config.status();
  return plan_linear_layers(*checkpoint, **config);
}

TEST(ValidateModel, CompleteTinyLlamaPasses) {
  CheckpointDir dir("valid_complete");
  add_tiny_llama(&dir, 2);
  const auto plan = plan_status(dir, tiny_llama_config(2));
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
}

TEST(ValidateModel, TiedEmbeddingsNeedNoLmHead) {
  CheckpointDir tied("valid_tied");
  add_tiny_llama(&tied, 1, /*lm_head=*/false);
  EXPECT_TRUE(plan_status(tied, tiny_llama_config(1, R"(, "tie_word_embeddings": true)")).ok());
  CheckpointDir untied("valid_untied");
  add_tiny_llama(&untied, 1, /*lm_head=*/false);
  EXPECT_QUANT_ERROR(plan_status(untied, tiny_llama_config(1)), ErrorCode::kNotFound, "lm_head",
                     "tie_word_embeddings");
}

TEST(ValidateModel, RopeTablesAndKvCacheScalesAreIgnoredOtherExtrasAreOrphans) {
  CheckpointDir dir("valid_ignored");
  add_tiny_llama(&dir, 1);
  dir.tensor("model.layers.0.self_attn.rotary_emb.inv_freq", DType::kF32, {2});
  dir.tensor("model.layers.0.self_attn.k_scale", DType::kF32, {});
  dir.tensor("model.layers.0.self_attn.v_proj.output_scale", DType::kF32, {});
  EXPECT_TRUE(plan_status(dir, tiny_llama_config(1)).ok());
  CheckpointDir extra("valid_extra");
  add_tiny_llama(&extra, 1);
  extra.tensor("model.layers.0.mlp.down_proj.qzeros", DType::kI32, {1, 1});
  extra.tensor("model.extra_norm.weight", DType::kBF16, {8});
  EXPECT_QUANT_ERROR(plan_status(extra, tiny_llama_config(1)), ErrorCode::kMisconfigured,
                     "2 tensor(s) belong to no layer", "model.extra_norm.weight",
                     "model.layers.0.mlp.down_proj.qzeros", "does not read qzeros");
}

TEST(ValidateModel, ForeignLinearLayerIsAnError) {
  CheckpointDir dir("valid_foreign");
  add_tiny_llama(&dir, 1);
  dir.tensor("model.layers.0.mlp.extra_proj.weight", DType::kBF16, {8, 8});
  EXPECT_QUANT_ERROR(plan_status(dir, tiny_llama_config(1)), ErrorCode::kMisconfigured,
                     "model.layers.0.mlp.extra_proj", "LlamaForCausalLM has no such layer");
}

TEST(ValidateModel, Qwen3NeedsItsHeadNorms) {
  CheckpointDir dir("valid_qwen3");
  add_tiny_llama(&dir, 1);
  const std::string config = R"("model_type": "qwen3", "hidden_size": 8, "intermediate_size": 16,
      "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 32)";
  EXPECT_QUANT_ERROR(plan_status(dir, config), ErrorCode::kNotFound,
                     "model.layers.0.self_attn.k_norm.weight", "Qwen3ForCausalLM");
  CheckpointDir with("valid_qwen3_norms");
  add_tiny_llama(&with, 1);
  with.tensor("model.layers.0.self_attn.q_norm.weight", DType::kBF16, {4});
  with.tensor("model.layers.0.self_attn.k_norm.weight", DType::kBF16, {4});
  EXPECT_TRUE(plan_status(with, config).ok());
}

TEST(ValidateModel, ConfigSizesMustAgreeWithTheTensors) {
  CheckpointDir dir("valid_sizes");
  add_tiny_llama(&dir, 1);
  EXPECT_QUANT_ERROR(plan_status(dir, tiny_llama_config(1, R"(, "intermediate_size": 32)")),
                     ErrorCode::kMisconfigured, "\"intermediate_size\" = 32",
                     "model.layers.0.mlp.up_proj");
  EXPECT_QUANT_ERROR(plan_status(dir, tiny_llama_config(1, R"(, "vocab_size": 64)")),
                     ErrorCode::kMisconfigured, "\"vocab_size\" = 64", "model.embed_tokens.weight");
  EXPECT_QUANT_ERROR(plan_status(dir, tiny_llama_config(1, R"(, "num_key_value_heads": 3)")),
                     ErrorCode::kMisconfigured, "\"num_key_value_heads\" = 3", "divide");
  EXPECT_QUANT_ERROR(plan_status(dir, R"("architectures": ["LlamaForCausalLM"], "hidden_size": 8)"),
                     ErrorCode::kMisconfigured, "\"intermediate_size\" is missing");
  EXPECT_QUANT_ERROR(plan_status(dir, R"("model_type": "llama",
                                         "architectures": ["Qwen2ForCausalLM"])"),
                     ErrorCode::kMisconfigured, "disagree");
}

TEST(ValidateModel, UnknownArchitecturesOnlyNeedQuantTensorsToBelongToALayer) {
  CheckpointDir dir("valid_unknown");
  dir.tensor("transformer.h.0.attn.c_attn.weight", DType::kBF16, {8, 8});
  dir.tensor("transformer.ln_f.weight", DType::kBF16, {8});
  EXPECT_TRUE(plan_status(dir, kPartialModel).ok());
  CheckpointDir stray("valid_unknown_stray");
  stray.tensor("transformer.h.0.attn.c_attn.weight", DType::kBF16, {8, 8});
  stray.tensor("transformer.h.0.attn.c_proj.scales", DType::kF16, {1, 8});
  EXPECT_QUANT_ERROR(plan_status(stray, kPartialModel), ErrorCode::kMisconfigured,
                     "transformer.h.0.attn.c_proj.scales", "no qweight");
}

}  // namespace
}  // namespace qlinear::quant_test
