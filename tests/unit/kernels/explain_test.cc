// explain over fixture checkpoints on simulated devices: every fused linear layer gets one row,
// the chosen kernels follow from each kernel's documented limits, and the JSON has the
// documented shape.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "fixtures/fixtures.h"
#include "io/checkpoint.h"
#include "kernels/explain.h"

namespace qlinear {
namespace {

std::string fixture_dir(std::string_view name) {
  const auto dir = std::filesystem::path(QLINEAR_TEST_TMPDIR) / "kernels_explain" / name;
  std::filesystem::create_directories(dir);
  return dir.string();
}

Checkpoint open_fixture(FixtureFormat format) {
  const std::string dir = fixture_dir(fixture_format_name(format));
  auto model = write_fixture(format, dir);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  auto checkpoint = Checkpoint::open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  return std::move(checkpoint).value();
}

std::map<std::string, const ExplainRow*> by_name(const ExplainReport& report) {
  std::map<std::string, const ExplainRow*> rows;
  for (const ExplainRow& row : report.layers) rows[row.name] = &row;
  return rows;
}

SelectionPolicy policy(const char* backend) {
  auto p = make_policy(backend, "", "");
  EXPECT_TRUE(p.ok());
  return p.ok() ? *p : SelectionPolicy{};
}

// Decode (M <= 16) runs the checkpoint's FP8 weights as W8A16 on the mma kernel; prefill runs
// W8A8 on cuBLASLt FP8 (the FP8 mode is decided per M bucket).
TEST(ExplainTest, Fp8DynamicOnSm90RunsW8A16DecodeAndW8A8Prefill) {
  const Checkpoint checkpoint = open_fixture(FixtureFormat::kCtFp8Dynamic);
  auto device = simulate_target("cuda:sm90");
  ASSERT_TRUE(device.ok());
  auto report = explain_model(checkpoint, *device, policy("auto"), {});
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  const auto rows = by_name(*report);
  // 2 decoder layers x (qkv_proj, o_proj, gate_up_proj, down_proj) + lm_head.
  ASSERT_EQ(report->layers.size(), 9u);
  for (const ExplainRow& row : report->layers) {
    if (row.name == "lm_head") {  // in the checkpoint's ignore list: dense bf16
      EXPECT_EQ(row.scheme, "dense bf16");
      EXPECT_EQ(row.kernel, "cuda.dense.blas.cublaslt");
      EXPECT_EQ(row.mode, "none");
      continue;
    }
    EXPECT_EQ(row.kernel, "cuda.fp8.w8a16.mma.sm80") << row.name;
    EXPECT_EQ(row.mode, "w8a16") << row.name;
    EXPECT_NE(row.mode_reason.find("dyn-token"), std::string::npos) << row.mode_reason;
    ASSERT_FALSE(row.rejected.empty());
    EXPECT_EQ(row.rejected.front().kernel, "cuda.int.gemv.sm80");
    EXPECT_EQ(row.rejected.front().reason.rfind("scheme", 0), 0u) << row.rejected.front().reason;
    ASSERT_EQ(row.selections.size(), 2u) << row.name;
    EXPECT_EQ(row.selections[0].m_max, 16);
    EXPECT_EQ(row.selections[1].m_min, 17);
    EXPECT_EQ(row.selections[1].kernel, "cuda.fp8.cublaslt.sm89") << row.name;
    EXPECT_EQ(row.selections[1].mode, "w8a8") << row.name;
  }
  ASSERT_TRUE(rows.contains("model.layers.0.self_attn.qkv_proj"));
  EXPECT_EQ(rows.at("model.layers.0.self_attn.qkv_proj")->problem,
            "fp8:channel:dyn-token:w8a16:K256:N512:a=bf16:M1-4096");

  const nlohmann::json json = nlohmann::json::parse(report->to_json());
  EXPECT_EQ(json["device"], device->describe());
  ASSERT_EQ(json["layers"].size(), 9u);
  for (const auto& layer : json["layers"]) {
    for (const char* key : {"name", "scheme", "kernel", "mode"}) {
      EXPECT_TRUE(layer[key].is_string()) << key;
    }
    ASSERT_TRUE(layer["rejected"].is_array());
    for (const auto& r : layer["rejected"]) {
      EXPECT_TRUE(r["kernel"].is_string());
      EXPECT_TRUE(r["reason"].is_string());
    }
  }
}

TEST(ExplainTest, AsymmetricInt8OnSm80WithTp2) {
  const Checkpoint checkpoint = open_fixture(FixtureFormat::kCtW8A16AsymChannel);
  auto device = simulate_target("cuda:sm80");
  ASSERT_TRUE(device.ok());
  ExplainOptions options;
  options.tp = 2;
  auto report = explain_model(checkpoint, *device, policy("auto"), options);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  const auto rows = by_name(*report);
  // The gemv kernel takes int8 with zero points (channelwise over the rank's K) for M <= 8, the
  // mma kernel M 9-16, the dequantized cuBLASLt GEMM prefill.
  for (const char* name : {"model.layers.0.self_attn.qkv_proj", "model.layers.0.self_attn.o_proj",
                           "model.layers.1.mlp.gate_up_proj", "model.layers.1.mlp.down_proj"}) {
    ASSERT_TRUE(rows.contains(name)) << name;
    const ExplainRow& row = *rows.at(name);
    EXPECT_EQ(row.kernel, "cuda.int.gemv.sm80") << name;
    EXPECT_EQ(row.scheme, "w8a16 channelwise zp") << name;
    // No int kernel that has device code is rejected (the others are other schemes' kernels,
    // the CPU reference kernels and the planned wgmma entry, which needs sm90).
    for (const ExplainRejection& r : row.rejected) {
      if (r.kernel.rfind("cuda.int.", 0) != 0) continue;
      EXPECT_EQ(r.kernel, "cuda.int.wgmma.sm90") << name << ": " << r.reason;
      EXPECT_EQ(r.reason.rfind("capability", 0), 0u) << r.reason;
    }
    ASSERT_EQ(row.selections.size(), 3u) << name;
    EXPECT_EQ(row.selections[0].kernel, "cuda.int.gemv.sm80") << name;
    EXPECT_EQ(row.selections[0].m_max, 8) << name;
    EXPECT_EQ(row.selections[1].kernel, "cuda.int.mma.sm80") << name;
    EXPECT_EQ(row.selections[1].m_max, 16) << name;
    EXPECT_EQ(row.selections[2].kernel, "cuda.int.blas.cublaslt") << name;
    ASSERT_GE(row.selections[2].rejected.size(), 2u) << name;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(row.selections[2].rejected[i].kernel,
                i == 0 ? "cuda.int.gemv.sm80" : "cuda.int.mma.sm80");
      EXPECT_EQ(row.selections[2].rejected[i].reason.rfind("m-range", 0), 0u)
          << row.selections[2].rejected[i].reason;
    }
  }
  // Rank 0's views: column-parallel splits N, row-parallel splits K (hidden 256, inter 512).
  EXPECT_EQ(rows.at("model.layers.1.mlp.gate_up_proj")->problem,
            "int8:g256:zp:K256:N512:tp2:Kf256:Nf1024:a=bf16:M1-4096");
  EXPECT_EQ(rows.at("model.layers.1.mlp.down_proj")->problem,
            "int8:g256:zp:K256:N256:tp2:Kf512:Nf256:a=bf16:M1-4096");
}

TEST(ExplainTest, LayerThatNothingFitsIsARowNotAFailure) {
  const Checkpoint checkpoint = open_fixture(FixtureFormat::kUnquantized);
  auto device = simulate_target("cuda:sm90");
  ASSERT_TRUE(device.ok());
  auto p = make_policy("native", "", "");
  ASSERT_TRUE(p.ok());
  auto report = explain_model(checkpoint, *device, *p, {});
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  ASSERT_FALSE(report->layers.empty());
  for (const ExplainRow& row : report->layers) {
    EXPECT_EQ(row.kernel, "") << row.name;  // no native CUDA kernel runs dense weights
    EXPECT_NE(row.error.find("no kernel accepts it"), std::string::npos) << row.error;
  }
  const nlohmann::json json = nlohmann::json::parse(report->to_json());
  EXPECT_TRUE(json["layers"][0].contains("error"));
}

// --tp 4 of 128x128 FP8 blocks on hidden 256: o_proj's 64 rows per rank straddle a block, so each
// rank takes the whole block with zero rows, and the note says which rows and what it costs.
TEST(ExplainTest, TensorParallelPaddingIsNamedPerRank) {
  const Checkpoint checkpoint = open_fixture(FixtureFormat::kFp8Block);
  auto device = simulate_target("cpu:avx2");
  ASSERT_TRUE(device.ok());
  ExplainOptions options;
  options.tp = 4;
  auto report = explain_model(checkpoint, *device, policy("auto"), options);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  const auto rows = by_name(*report);
  const std::string& o_note = rows.at("model.layers.0.self_attn.o_proj")->note;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(o_note.find("rank " + std::to_string(rank) + " of 4 owns K rows"), std::string::npos)
        << o_note;
  }
  EXPECT_NE(o_note.find("64 zero rows"), std::string::npos) << o_note;
  // Rank 0's problem is the padded one: K = one whole block.
  EXPECT_NE(rows.at("model.layers.0.self_attn.o_proj")->problem.find("K128"), std::string::npos)
      << rows.at("model.layers.0.self_attn.o_proj")->problem;
  // tp 2 splits hidden 256 on block boundaries: no padding, no note.
  options.tp = 2;
  auto exact = explain_model(checkpoint, *device, policy("auto"), options);
  ASSERT_TRUE(exact.ok()) << exact.status().to_string();
  EXPECT_EQ(by_name(*exact).at("model.layers.0.self_attn.o_proj")->note, "");
}

}  // namespace
}  // namespace qlinear
