// config.json of every supported architecture in both transformers layouts, the rotary
// frequencies against transformers' formulas written out here, and the errors for what is not
// supported (each naming the key and the value).
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

namespace qlinear {
namespace {

using Json = nlohmann::json;

Json llama3() {
  return Json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu"})");
}

TEST(ModelConfig, Llama32WithLlama3Rope) {
  auto c = parse_model_config(llama3(), nullptr, "m");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->kv_size(), 512);
  EXPECT_TRUE(c->tie_embeddings);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_EQ(c->rope.type, RopeType::kLlama3);
  EXPECT_EQ(c->eos_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(*c->bos_id, 128000);
  // transformers' _compute_llama3_parameters, written out: low frequencies divided by 32, high
  // ones kept, the band between them smoothed.
  const RopeFrequencies f = rope_frequencies(*c);
  ASSERT_EQ(f.inv_freq.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    const double base = 1.0 / std::pow(500000.0, 2.0 * i / 64.0);
    const double wavelen = 2 * std::numbers::pi / base;
    double want = base;
    if (wavelen > 8192.0 / 1.0) {
      want = base / 32.0;
    } else if (wavelen >= 8192.0 / 4.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      want = (1 - smooth) * base / 32.0 + smooth * base;
    }
    EXPECT_NEAR(f.inv_freq[i], want, 1e-12 * base) << i;
  }
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(ModelConfig, Transformers5LayoutWithRopeParametersAndLayerTypes) {
  Json j = llama3();
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j.erase("torch_dtype");
  j["dtype"] = "float16";
  j["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 10000.0}, {"factor", 4.0}};
  auto c = parse_model_config(j, nullptr, "m");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->dtype, DType::kF16);
  EXPECT_EQ(c->rope.type, RopeType::kLinear);
  EXPECT_EQ(c->rope.theta, 10000.0);
  const RopeFrequencies f = rope_frequencies(*c);
  EXPECT_DOUBLE_EQ(f.inv_freq[1], 1.0 / std::pow(10000.0, 2.0 / 64.0) / 4.0);
}

TEST(ModelConfig, QwenMistralSpecifics) {
  Json q2 = llama3();
  q2["architectures"] = {"Qwen2ForCausalLM"};
  q2.erase("rope_scaling");
  q2["use_sliding_window"] = false;
  q2["sliding_window"] = 4096;
  auto qwen2 = parse_model_config(q2, nullptr, "m");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status().to_string();
  EXPECT_TRUE(qwen2->qkv_bias);
  EXPECT_FALSE(qwen2->o_bias);
  EXPECT_EQ(qwen2->sliding_window, 0);  // use_sliding_window false

  Json q3 = q2;
  q3["architectures"] = {"Qwen3ForCausalLM"};
  q3["head_dim"] = 128;
  auto qwen3 = parse_model_config(q3, nullptr, "m");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_TRUE(qwen3->qk_norm);
  EXPECT_FALSE(qwen3->qkv_bias);
  EXPECT_EQ(qwen3->head_dim, 128);
  EXPECT_EQ(qwen3->q_size(), 32 * 128);

  Json m = llama3();
  m["architectures"] = {"MistralForCausalLM"};
  m.erase("rope_scaling");
  m["head_dim"] = 128;
  m["sliding_window"] = 4096;
  auto mistral = parse_model_config(m, nullptr, "m");
  ASSERT_TRUE(mistral.ok());
  EXPECT_EQ(mistral->sliding_window, 4096);
  EXPECT_TRUE(mistral->layer_is_sliding(0));
  EXPECT_TRUE(mistral->layer_is_sliding(15));
}

TEST(ModelConfig, YarnAttentionFactorAndRamp) {
  Json j = llama3();
  j["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  j["rope_theta"] = 1000000.0;
  auto c = parse_model_config(j, nullptr, "m");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeFrequencies f = rope_frequencies(*c);
  EXPECT_NEAR(f.attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-12);
  // The fastest frequency is extrapolated (kept), the slowest interpolated (divided by 4).
  EXPECT_DOUBLE_EQ(f.inv_freq.front(), 1.0);
  EXPECT_NEAR(f.inv_freq.back(), 1.0 / std::pow(1e6, 62.0 / 64.0) / 4.0, 1e-18);
}

TEST(ModelConfig, GenerationConfigOverridesEos) {
  const Json gen = Json::parse(
      R"({"eos_token_id": 7, "do_sample": true, "temperature": 0.6, "top_p": 0.9, "top_k": 20})");
  Json j = llama3();
  j["vocab_size"] = 100;
  j["eos_token_id"] = 5;
  j["bos_token_id"] = 1;
  auto c = parse_model_config(j, &gen, "m");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->eos_ids, std::vector<int32_t>{7});
  EXPECT_EQ(*c->generation.temperature, 0.6);
  EXPECT_EQ(*c->generation.top_k, 20);
  EXPECT_TRUE(*c->generation.do_sample);
}

TEST(ModelConfig, UnsupportedValuesNameTheKey) {
  const auto message = [](const Json& j) {
    auto c = parse_model_config(j, nullptr, "dir");
    EXPECT_FALSE(c.ok());
    return c.ok() ? std::string() : c.status().message();
  };
  Json arch = llama3();
  arch["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_NE(message(arch).find("GPT2LMHeadModel"), std::string::npos);
  EXPECT_NE(message(arch).find("Qwen3ForCausalLM"), std::string::npos);  // lists the supported
  Json dynamic = llama3();
  dynamic["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_NE(message(dynamic).find("\"dynamic\""), std::string::npos);
  Json missing = llama3();
  missing.erase("hidden_size");
  EXPECT_NE(message(missing).find("\"hidden_size\""), std::string::npos);
  Json gqa = llama3();
  gqa["num_key_value_heads"] = 5;
  EXPECT_NE(message(gqa).find("num_key_value_heads"), std::string::npos);
  Json act = llama3();
  act["hidden_act"] = "gelu";
  EXPECT_NE(message(act).find("hidden_act"), std::string::npos);
  Json eos = llama3();
  eos["eos_token_id"] = 999999;
  EXPECT_NE(message(eos).find("999999"), std::string::npos);
}

}  // namespace
}  // namespace qlinear
