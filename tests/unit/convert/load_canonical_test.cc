// load_canonical on a real checkpoint folder written with SafetensorsWriter: fused GPTQ, FP8 and
// dense layers, tensor names in errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "convert/convert.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "test_tensors.h"

namespace qlinear {
namespace {

using ::testing::HasSubstr;

std::string make_dir(const std::string& name) {
  const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/convert_load_canonical/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"llama\"}";
  return dir;
}

QuantSpec gptq_spec(const std::string& layer) {
  QuantSpec s;
  s.layer = layer;
  s.format = QuantFormat::kGptq;
  s.quantized = true;
  IntSpec i;
  i.bits = 4;
  i.group_size = 16;
  i.sym = false;
  i.zero_format = GptqZeroFormat::kV2;
  s.int_spec = i;
  return s;
}

struct GptqShard {
  std::vector<uint32_t> q, z;
  std::vector<float> s;
  int64_t n;
};

TEST(LoadCanonical, FusedGptqConcatenatesShardsAlongN) {
  const std::string dir = make_dir("gptq");
  const int64_t k = 32;
  const std::vector<std::string> shards = {"model.layers.0.self_attn.q_proj",
                                           "model.layers.0.self_attn.k_proj",
                                           "model.layers.0.self_attn.v_proj"};
  const std::vector<int64_t> sizes = {16, 8, 8};
  std::vector<GptqShard> data;
  SafetensorsWriter writer;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto seed = static_cast<uint32_t>(10 * i);
    GptqShard d{testing::random_codes(k, sizes[i], 0, 15, seed),
                testing::random_codes(2, sizes[i], 0, 15, seed + 1),
                testing::random_scales(2 * sizes[i], seed + 2), sizes[i]};
    writer.add_values(shards[i] + ".qweight", DType::kI32, {k / 8, d.n},
                      testing::pack_along_rows(d.q, k, d.n, 4));
    writer.add_values(shards[i] + ".qzeros", DType::kI32, {2, d.n / 8},
                      testing::pack_along_cols(d.z, 2, d.n, 4, testing::sequential_order(4)));
    writer.add_values(shards[i] + ".scales", DType::kF32, {2, d.n}, d.s);
    data.push_back(std::move(d));
  }
  ASSERT_TRUE(writer.write(dir + "/model.safetensors").ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  LinearLayer layer{"model.layers.0.self_attn.qkv_proj",
                    shards,
                    {gptq_spec(shards[0]), gptq_spec(shards[1]), gptq_spec(shards[2])},
                    {}};
  auto c = load_canonical(*ckpt, layer);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->name, layer.name);
  EXPECT_EQ(c->shard_sizes, sizes);
  EXPECT_EQ(c->N(), 32);
  EXPECT_EQ(c->K(), k);
  int64_t col = 0;
  for (const GptqShard& d : data) {
    for (int64_t n = 0; n < d.n; ++n, ++col) {
      for (int64_t kk = 0; kk < k; ++kk) {
        const auto g = static_cast<std::size_t>(kk / 16);
        const auto idx = g * static_cast<std::size_t>(d.n) + static_cast<std::size_t>(n);
        const int q = static_cast<int>(d.q[static_cast<std::size_t>(kk * d.n + n)]);
        ASSERT_EQ(c->dequant(col, kk),
                  static_cast<float>(q - static_cast<int>(d.z[idx])) * d.s[idx]);
      }
    }
  }

  // A missing shard tensor names the tensor.
  LinearLayer missing{
      "x", {"model.layers.9.mlp.up_proj"}, {gptq_spec("model.layers.9.mlp.up_proj")}, {}};
  auto err = load_canonical(*ckpt, missing);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(err.status().message(), HasSubstr("model.layers.9.mlp.up_proj.qweight"));
}

TEST(LoadCanonical, ShapeErrorsNameTheFileAndTensor) {
  const std::string dir = make_dir("shape_error");
  SafetensorsWriter writer;
  writer.add_values("m.up_proj.qweight", DType::kI32, {4, 16}, std::vector<int32_t>(64, 0));
  writer.add_values("m.up_proj.scales", DType::kF32, {1, 8}, std::vector<float>(8, 1.0f));
  ASSERT_TRUE(writer.write(dir + "/model.safetensors").ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  QuantSpec spec = gptq_spec("m.up_proj");
  spec.int_spec->sym = true;
  spec.int_spec->group_size = -1;
  auto c = load_canonical(*ckpt, LinearLayer{"m.up_proj", {"m.up_proj"}, {spec}, {}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("model.safetensors: \"m.up_proj.qweight\" has shape [4, 16]"));
}

TEST(LoadCanonical, Fp8PerTensorShardsAndStaticInput) {
  const std::string dir = make_dir("fp8");
  SafetensorsWriter writer;
  const std::vector<std::string> shards = {"m.gate_proj", "m.up_proj"};
  std::vector<std::vector<uint8_t>> q;
  for (std::size_t i = 0; i < 2; ++i) {
    std::vector<uint8_t> codes(4 * 8);
    for (std::size_t j = 0; j < codes.size(); ++j)
      codes[j] = static_cast<uint8_t>((j * 13 + i) % 0x7E);
    writer.add_values(shards[i] + ".weight", DType::kF8E4M3, {4, 8}, codes);
    writer.add_values(shards[i] + ".weight_scale", DType::kF32, {},
                      std::vector<float>{i == 0 ? 0.5f : 2.0f});
    writer.add_values(shards[i] + ".input_scale", DType::kF32, {1},
                      std::vector<float>{i == 0 ? 0.125f : 0.25f});
    q.push_back(codes);
  }
  ASSERT_TRUE(writer.write(dir + "/model.safetensors").ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  QuantSpec spec;
  spec.format = QuantFormat::kCompressedTensors;
  spec.quantized = true;
  Fp8Spec f;
  f.weight = Fp8WeightGranularity::kTensor;
  f.activation = ActQuant::kStaticTensor;
  spec.fp8_spec = f;
  auto c = load_canonical(*ckpt, LinearLayer{"m.gate_up_proj", shards, {spec, spec}, {}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const auto& w = std::get<Fp8Weights>(c->weights);
  EXPECT_EQ(w.input_scale, 0.25f);
  EXPECT_EQ(c->shard_sizes, (std::vector<int64_t>{4, 4}));
  for (int64_t n = 0; n < 8; ++n) {
    for (int64_t k = 0; k < 8; ++k) {
      const uint8_t code =
          q[static_cast<std::size_t>(n / 4)][static_cast<std::size_t>((n % 4) * 8 + k)];
      ASSERT_EQ(c->dequant(n, k), f8e4m3_to_f32(code) * (n < 4 ? 0.5f : 2.0f));
    }
  }
}

TEST(LoadCanonical, DenseWithBias) {
  const std::string dir = make_dir("dense");
  SafetensorsWriter writer;
  std::vector<uint16_t> w(6);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(static_cast<float>(i));
  writer.add_values("lm_head.weight", DType::kBF16, {3, 2}, w);
  writer.add_values("lm_head.bias", DType::kBF16, {3}, std::vector<uint16_t>(3, f32_to_bf16(1.5f)));
  ASSERT_TRUE(writer.write(dir + "/model.safetensors").ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  QuantSpec spec;
  spec.layer = "lm_head";
  auto c = load_canonical(*ckpt, LinearLayer{"lm_head", {"lm_head"}, {spec}, {}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->describe(), "dense bf16");
  EXPECT_EQ(c->dequant(2, 1), 5.0f);
  EXPECT_EQ(std::get<DenseWeights>(c->weights).bias, (std::vector<float>{1.5f, 1.5f, 1.5f}));
}

}  // namespace
}  // namespace qlinear
