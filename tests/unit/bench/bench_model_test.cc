// bench-model's synthetic models: every format builds, decodes, and reports bytes per token that
// follow from the shapes (a 4-bit model reads about a quarter of the bf16 one's linear bytes).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bench/bench_model.h"

namespace qlinear::bench {
namespace {

ModelBenchResult run(const std::string& format) {
  ModelBenchOptions options;
  options.synthetic = "tiny";
  options.format = format;
  options.prompt_len = 5;
  options.gen_len = 3;
  options.decoder.progress = false;
  options.decoder.ctx = 16;
  auto r = run_model_bench(options);
  EXPECT_TRUE(r.ok()) << format << ": " << r.status().to_string();
  return r.ok() ? *r : ModelBenchResult{};
}

TEST(BenchModel, EverySyntheticFormatRunsAndCountsItsBytes) {
  std::map<std::string, uint64_t> bytes;
  for (const std::string& format : model_format_names()) {
    const ModelBenchResult r = run(format);
    EXPECT_EQ(r.format, format);
    EXPECT_GT(r.prefill_tokens_per_s, 0.0) << format;
    EXPECT_GT(r.decode_tokens_per_s, 0.0) << format;
    EXPECT_GT(r.membw_gbps, 0.0) << format;
    EXPECT_FALSE(r.kernels.empty()) << format;
    bytes[format] = r.bytes_per_token;
  }
  // tiny: 2 layers of (qkv 256x512, o 256x256, gate_up 256x1024, down 512x256) = 2 x 589824
  // weights, plus the bf16 lm_head 1000 x 256, the embedding row and a few KiB of KV cache.
  const double linear = 2 * 589824.0;
  const double lm_head = 1000.0 * 256 * 2;
  ASSERT_TRUE(bytes.count("bf16") && bytes.count("w4a16g128") && bytes.count("w8a16"));
  EXPECT_GE(static_cast<double>(bytes["bf16"]), 2 * linear + lm_head);
  EXPECT_LT(static_cast<double>(bytes["bf16"]), 2 * linear + lm_head + 64e3);
  EXPECT_GE(static_cast<double>(bytes["w4a16g128"]), 0.5 * linear + lm_head);
  EXPECT_LT(static_cast<double>(bytes["w4a16g128"]), 0.6 * linear + lm_head + 64e3);
  EXPECT_LT(bytes["w4a16g128"], bytes["w8a16"]);
  EXPECT_LT(bytes["w8a16"], bytes["bf16"]);
}

TEST(BenchModel, UnknownModelsAndFormatsAreErrorsListingTheChoices) {
  ModelBenchOptions options;
  options.synthetic = "llama9";
  auto r = run_model_bench(options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("synth-1b"), std::string::npos) << r.status().message();
  options.synthetic = "tiny";
  options.format = "w3";
  r = run_model_bench(options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("w4a16g128"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace qlinear::bench
