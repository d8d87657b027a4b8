// The recorded decode step (a CUDA graph replayed every token) against the same decoder launching
// every kernel from the host (--eager): the logits of every step must be equal bit for bit, and
// the decoder must say that the graph ran. On the transformers-written folders of tests/data/hf
// (sliding windows, Qwen3's head norms, sharded checkpoints). Skipped without a CUDA GPU; the CPU
// case (never recorded, and saying why) runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model/decoder.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;

fs::path hf_dir(const std::string& name) {
  const char* env = std::getenv("QLINEAR_SOURCE_DIR");
  const fs::path root =
      env != nullptr && *env != '\0' ? fs::path(env) : fs::path(QLINEAR_SOURCE_DIR);
  return root / "tests" / "data" / "hf" / name;
}

Result<std::unique_ptr<Decoder>> load(const std::string& name, const Device& device, bool record) {
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = 16;
  options.progress = false;
  options.record_decode = record;
  return Decoder::load(hf_dir(name).string(), device, options);
}

int32_t argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

class DecodeGraph : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeGraph, ReplayedStepsEqualTheEagerStepsBitForBit) {
  Result<Device> device = detect_device("cuda");
  if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().to_string();
  auto recorded = load(GetParam(), *device, true);
  auto eager = load(GetParam(), *device, false);
  ASSERT_TRUE(recorded.ok()) << recorded.status().to_string();
  ASSERT_TRUE(eager.ok()) << eager.status().to_string();
  const int64_t vocab = (*recorded)->config().vocab;
  std::vector<float> a(static_cast<std::size_t>(vocab));
  std::vector<float> b(a.size());
  auto row = [&](std::vector<float>& v) {
    return MatrixView::dense(v.data(), DType::kF32, 1, vocab);
  };

  const std::vector<int32_t> prompt = {1, 5, 9, 2, 7};
  ASSERT_TRUE((*recorded)->forward(prompt, 0, false, row(a)).ok());
  ASSERT_TRUE((*eager)->forward(prompt, 0, false, row(b)).ok());
  int32_t token = argmax(b);
  // Step 1 runs launch by launch in both; step 2 records; steps 3.. replay.
  for (int64_t step = 0; step < 8; ++step) {
    const int64_t position = static_cast<int64_t>(prompt.size()) + step;
    const std::vector<int32_t> one = {token};
    ASSERT_TRUE((*recorded)->forward(one, position, false, row(a)).ok());
    ASSERT_TRUE((*eager)->forward(one, position, false, row(b)).ok());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << GetParam() << ": step " << step << " logits differ (argmax " << argmax(a) << " vs "
        << argmax(b) << ")";
    token = argmax(b);
  }
  EXPECT_EQ((*recorded)->decode_step(), "CUDA graph");
  EXPECT_EQ((*eager)->decode_step(), "launch by launch (--eager)");
}

INSTANTIATE_TEST_SUITE_P(Folders, DecodeGraph,
                         ::testing::Values("llama3", "mistral", "qwen2", "qwen3", "llama_sharded"),
                         [](const ::testing::TestParamInfo<std::string>& folder) {
                           return folder.param;
                         });

TEST(DecodeGraphCpu, TheCpuRunsLaunchByLaunchAndSaysSo) {
  Result<Device> device = detect_device("cpu");
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  auto decoder = load("llama3", *device, true);
  ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
  std::vector<float> logits(static_cast<std::size_t>((*decoder)->config().vocab));
  const MatrixView out =
      MatrixView::dense(logits.data(), DType::kF32, 1, (*decoder)->config().vocab);
  for (int64_t p = 0; p < 3; ++p) {
    const std::vector<int32_t> one = {static_cast<int32_t>(p + 3)};
    ASSERT_TRUE((*decoder)->forward(one, p, false, out).ok());
  }
  EXPECT_EQ((*decoder)->decode_step(), "launch by launch (the cpu)");
}

}  // namespace
}  // namespace qlinear
