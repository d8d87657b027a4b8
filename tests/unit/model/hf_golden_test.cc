// The runner against Hugging Face itself: every folder under tests/data/hf was written by
// transformers' save_pretrained (tools/make_hf_fixtures.py, random weights, bf16), next to the
// float64 logits transformers computes for a fixed prompt and its greedy continuation. qlinear's
// logits (f32 activations) must match within 1e-3 relative Frobenius error on unquantized folders
// (FP8 folders: within the W8A8 bound documented in docs/runner.md, 0.1), and greedy ids must be
// equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "model/decoder.h"
#include "model/generation.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;

// The source tree: QLINEAR_SOURCE_DIR in the environment (a binary staged to another machine,
// tests/device/), else the one this binary was built from.
fs::path source_dir() {
  const char* env = std::getenv("QLINEAR_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(QLINEAR_SOURCE_DIR);
}

std::vector<std::string> golden_folders() {
  std::vector<std::string> dirs;
  const fs::path root = source_dir() / "tests" / "data" / "hf";
  if (!fs::exists(root)) return dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "golden.json")) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// (folder, device): every folder on the CPU, on this machine's first CUDA GPU and on its first
// OpenCL device (PoCL in CI; each GPU case skipped where there is none).
using GoldenCase = std::tuple<std::string, std::string>;
class HfGolden : public ::testing::TestWithParam<GoldenCase> {
 protected:
  // The case's folder on its device with `kv_dtype`: the prompt's logits against transformers'
  // float64 ones as a relative Frobenius error (skips when the device is missing).
  void run_prompt(DType kv_dtype) {
    const auto& [dir, device_spec] = GetParam();
    std::ifstream in(dir + "/golden.json");
    const nlohmann::json golden = nlohmann::json::parse(in);
    prompt_ = golden["prompt_ids"].get<std::vector<int32_t>>();
    greedy_ = golden["greedy_ids"].get<std::vector<int32_t>>();
    auto file = SafetensorsFile::open(dir + "/golden.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const TensorInfo* info = (*file)->find("logits");
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(info->dtype, DType::kF64);
    const auto* want = reinterpret_cast<const double*>((*file)->data(*info).data());
    Result<Device> device = detect_device(device_spec);
    if (!device.ok() && device_spec != "cpu") {
      GTEST_SKIP() << "no " << device_spec << " device: " << device.status().to_string();
    }
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    DecoderOptions options;
    options.ctx = 64;
    options.max_rows = 32;
    options.progress = false;
    options.kv_dtype = kv_dtype;
    auto decoder = Decoder::load(dir, *device, options);
    ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
    decoder_ = std::move(decoder).value();
    const int64_t vocab = decoder_->config().vocab;
    ASSERT_EQ(info->shape, (Shape{static_cast<int64_t>(prompt_.size()), vocab}));
    std::vector<float> got(prompt_.size() * static_cast<std::size_t>(vocab));
    ASSERT_TRUE(decoder_
                    ->forward(prompt_, 0, true,
                              MatrixView::dense(got.data(), DType::kF32,
                                                static_cast<int64_t>(prompt_.size()), vocab))
                    .ok());
    double diff = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      diff += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    error_ = std::sqrt(diff / norm);
  }

  std::vector<int32_t> prompt_, greedy_;
  std::unique_ptr<Decoder> decoder_;
  double error_ = 0.0;
};

TEST_P(HfGolden, LogitsAndGreedyIdsMatchTransformers) {
  const auto& [dir, device_spec] = GetParam();
  run_prompt(DType::kF32);
  if (IsSkipped() || HasFatalFailure()) return;
  const bool fp8 = dir.find("fp8") != std::string::npos;
  EXPECT_LE(error_, fp8 ? 0.1 : 1e-3) << dir << " on " << device_spec;
  if (fp8) return;  // W8A8 activations: greedy ids may differ where logits are close
  GenerationOptions gen;
  gen.max_tokens = static_cast<int64_t>(greedy_.size());
  auto result = generate(*decoder_, prompt_, gen);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->output_ids, greedy_) << dir << " on " << device_spec;
}

// The FP8 KV cache (--kv-dtype fp8, model/kv_fp8.h) on the same folders: its cost is measured
// against transformers' float64 logits and bounded (docs/runner.md "FP8 KV cache"; dev VM,
// 2026-12-03: 0.040 to 0.054 on the bf16 folders, 0.075 on the FP8 one, whose W8A8 error adds;
// the f32 cache's errors are below 1e-3). Bounds: 0.1, and 0.15 on FP8 folders. Every device
// (CPU, CUDA, OpenCL).
TEST_P(HfGolden, Fp8KvCacheLogitsStayWithinItsBound) {
  const auto& [dir, device_spec] = GetParam();
  run_prompt(DType::kF8E4M3);
  if (IsSkipped() || HasFatalFailure()) return;
  RecordProperty("fp8_kv_relative_error", std::to_string(error_));
  std::printf("fp8 KV cache: %s on %s: relative Frobenius error %.3g against transformers\n",
              dir.c_str(), device_spec.c_str(), error_);
  EXPECT_LE(error_, dir.find("fp8") != std::string::npos ? 0.15 : 0.1)
      << dir << " on " << device_spec;
  // The cache is really FP8: its error is well above the f32 cache's 1e-3 bound somewhere in the
  // prompt (a cache that silently stayed f32 would pass the bound above).
  EXPECT_GT(error_, 1e-4) << dir << " on " << device_spec;
}

INSTANTIATE_TEST_SUITE_P(Folders, HfGolden,
                         ::testing::Combine(::testing::ValuesIn(golden_folders()),
                                            ::testing::Values(std::string("cpu"),
                                                              std::string("cuda"),
                                                              std::string("opencl"))),
                         [](const ::testing::TestParamInfo<GoldenCase>& param) {
                           std::string name =
                               fs::path(std::get<0>(param.param)).filename().string() + "_" +
                               std::get<1>(param.param);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HfGolden);

TEST(HfGoldenData, TheCommittedFoldersArePresent) {
  // The goldens are committed data (tools/make_hf_fixtures.py made them): their absence is a
  // broken checkout, not a reason to skip.
  EXPECT_GE(golden_folders().size(), 7u);
}

}  // namespace
}  // namespace qlinear
