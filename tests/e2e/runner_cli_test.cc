// The runner commands as a user runs them: `generate` on a folder written by Hugging Face's
// transformers (tests/data/hf, tools/make_hf_fixtures.py) against transformers' own float64
// logits and greedy ids, `verify` on the project's example models, and `bench-model` on a folder;
// plus their usage errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "io/safetensors.h"

namespace qlinear {
namespace {

e2e::CliRun run_cli(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string err_dir = e2e::fresh_dir("runner_stderr", std::to_string(counter++));
  std::filesystem::create_directories(err_dir);
  return e2e::run_cli(args, err_dir);
}

std::string hf_dir(const std::string& name) {
  return std::string(QLINEAR_SOURCE_DIR) + "/tests/data/hf/" + name;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

TEST(RunnerCli, GenerateMatchesTransformersLogitsAndGreedyIds) {
  const std::string dir = hf_dir("qwen3");
  std::ifstream in(dir + "/golden.json");
  ASSERT_TRUE(in.good()) << dir;
  const nlohmann::json golden = nlohmann::json::parse(in);
  const auto prompt = golden["prompt_ids"].get<std::vector<int32_t>>();
  const auto greedy = golden["greedy_ids"].get<std::vector<int32_t>>();
  const std::string scratch = e2e::fresh_dir("runner", "qwen3_logits");
  std::filesystem::create_directories(scratch);
  const std::string logits = scratch + "/logits.safetensors";
  const e2e::CliRun r = run_cli({"generate", "--model", dir, "--prompt-ids", join_ids(prompt),
                                 "--max-tokens", std::to_string(greedy.size()), "--temperature",
                                 "0", "--ctx", "64", "--json", "--logits-out", logits});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), prompt);
  // transformers pads its 10 ids with pad_token_id after an EOS; qlinear stops there, so its ids
  // are a prefix of transformers'.
  const auto out = j["output_ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(out.empty());
  ASSERT_LE(out.size(), greedy.size());
  EXPECT_EQ(out, std::vector<int32_t>(greedy.begin(), greedy.begin() + out.size()));
  for (const char* key : {"load_s", "prefill_tokens_per_s", "decode_tokens_per_s"}) {
    EXPECT_TRUE(j[key].is_number()) << key;
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
  }
  // The process's peak resident memory (getrusage): at least the binary's own pages.
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 0.0);
  // On the CPU "auto" is f32 activations and an f32 KV cache (transformers' CPU numerics, which
  // the logits below are held to).
  EXPECT_EQ(j["dtype"], "f32");
  EXPECT_EQ(j["kv_dtype"], "f32");
  EXPECT_FALSE(j["kernels"].empty());
  EXPECT_TRUE(j["text"].is_string());

  // Every processed position, prompt first: its rows equal transformers' float64 logits.
  auto written = SafetensorsFile::open(logits);
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  const TensorInfo* got = (*written)->find("logits");
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(got->dtype, DType::kF32);
  auto want_file = SafetensorsFile::open(dir + "/golden.safetensors");
  ASSERT_TRUE(want_file.ok());
  const TensorInfo* want = (*want_file)->find("logits");
  ASSERT_NE(want, nullptr);
  const int64_t vocab = want->shape[1];
  ASSERT_EQ(got->shape, (Shape{static_cast<int64_t>(prompt.size() + out.size()) - 1, vocab}));
  const auto* g = reinterpret_cast<const float*>((*written)->data(*got).data());
  const auto* w = reinterpret_cast<const double*>((*want_file)->data(*want).data());
  double diff = 0.0;
  double norm = 0.0;
  for (int64_t i = 0; i < static_cast<int64_t>(prompt.size()) * vocab; ++i) {
    diff += (g[i] - w[i]) * (g[i] - w[i]);
    norm += w[i] * w[i];
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-3);
}

TEST(RunnerCli, GenerateWithTensorParallelEmulationGivesTheSameIds) {
  const std::string dir = hf_dir("llama3");
  const std::vector<std::string> base = {"generate",   "--model",      dir, "--prompt-ids",
                                         "1,17,240,9", "--max-tokens", "6", "--json"};
  const e2e::CliRun one = run_cli(base);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> split = base;
  split.insert(split.end(), {"--tp", "2"});
  const e2e::CliRun two = run_cli(split);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["output_ids"],
            nlohmann::json::parse(two.out)["output_ids"]);
}

TEST(RunnerCli, GenerateUsageErrorsNameTheFlag) {
  const std::string dir = hf_dir("llama3");
  const e2e::CliRun none = run_cli({"generate", "--model", dir});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("--prompt"), std::string::npos) << none.err;
  const e2e::CliRun bad = run_cli({"generate", "--model", dir, "--prompt-ids", "1,x,3"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("\"x\""), std::string::npos) << bad.err;
  const e2e::CliRun big = run_cli({"generate", "--model", dir, "--prompt-ids", "1,999999"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.err.find("999999"), std::string::npos) << big.err;
  const e2e::CliRun tp = run_cli({"generate", "--model", dir, "--prompt-ids", "1", "--tp", "3"});
  EXPECT_NE(tp.exit_code, 0);
  EXPECT_NE(tp.err.find("--tp 3"), std::string::npos) << tp.err;
}

TEST(RunnerCli, VerifyPassesOnExamplesAndFailsPastTheTolerance) {
  for (const char* format : {"awq", "gptq_act_order", "fp8_block", "unquantized"}) {
    const std::string dir = e2e::fresh_dir("runner", std::string("verify_") + format);
    ASSERT_EQ(run_cli({"example", "--format", format, "--out", dir}).exit_code, 0);
    const e2e::CliRun r = run_cli({"verify", "--model", dir, "--json"});
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["failed"], 0);
    EXPECT_GE(j["layers"].size(), 9u) << format;
    for (const auto& layer : j["layers"]) {
      EXPECT_LE(layer["error"].get<double>(), j["tolerance"].get<double>()) << layer.dump();
    }
    if (std::string(format) == "awq") {
      // Kernels and the reference differ in f32 rounding, so a zero tolerance must fail.
      const e2e::CliRun strict = run_cli({"verify", "--model", dir, "--tolerance", "0"});
      EXPECT_NE(strict.exit_code, 0);
      EXPECT_NE(strict.err.find("differ from the reference"), std::string::npos) << strict.err;
    }
  }
}

TEST(RunnerCli, BenchModelOnAFolderReportsSpeedsAndBytes) {
  const std::string dir = e2e::fresh_dir("runner", "bench_model");
  ASSERT_EQ(run_cli({"example", "--format", "gptq_asym4", "--out", dir}).exit_code, 0);
  const e2e::CliRun r =
      run_cli({"bench-model", "--model", dir, "--prompt-len", "8", "--gen-len", "4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const char* key : {"prefill_tokens_per_s", "decode_tokens_per_s", "bytes_per_token",
                          "membw_gbps", "ratio_membw", "peak_rss_mib"}) {
    ASSERT_TRUE(j[key].is_number()) << key << " in " << r.out;
    EXPECT_GT(j[key].get<double>(), 0.0) << key;
  }
  EXPECT_EQ(j["model"], dir);
  // bench-model runs bf16 activations and KV cache on every device unless told otherwise.
  EXPECT_EQ(j["dtype"], "bf16");
  EXPECT_EQ(j["kv_dtype"], "bf16");
  // A decode step reads every linear weight once: at least the packed 4-bit layers.
  EXPECT_GT(j["bytes_per_token"].get<double>(), 500e3);
}

// --batch B: B sequences decoded together; the record says per sequence and in total, and the
// bytes of a step count the weights once and every sequence's cache rows. Out of range: an error.
TEST(RunnerCli, BenchModelBatchReportsPerSequenceAndTotal) {
  const std::string dir = e2e::fresh_dir("runner", "bench_model_batch");
  ASSERT_EQ(run_cli({"example", "--format", "gptq_asym4", "--out", dir}).exit_code, 0);
  const e2e::CliRun one =
      run_cli({"bench-model", "--model", dir, "--prompt-len", "8", "--gen-len", "4", "--json"});
  const e2e::CliRun three = run_cli({"bench-model", "--model", dir, "--prompt-len", "8",
                                     "--gen-len", "4", "--batch", "3", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(three.exit_code, 0) << three.err;
  const auto j1 = nlohmann::json::parse(one.out, nullptr, false);
  const auto j = nlohmann::json::parse(three.out, nullptr, false);
  ASSERT_FALSE(j1.is_discarded() || j.is_discarded()) << one.out << three.out;
  EXPECT_EQ(j1["batch"], 1);
  EXPECT_EQ(j["batch"], 3);
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["total_tokens_per_s"].get<double>(),
                   3.0 * j["decode_tokens_per_s"].get<double>());
  // The same weights; two more sequences' cache rows and embedding rows.
  EXPECT_GT(j["bytes_per_token"].get<double>(), j1["bytes_per_token"].get<double>());
  EXPECT_LT(j["bytes_per_token"].get<double>(), 1.5 * j1["bytes_per_token"].get<double>());
  const e2e::CliRun bad = run_cli({"bench-model", "--model", dir, "--batch", "0"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--batch"), std::string::npos) << bad.err;
}

// Sampling options: the record carries them and where the picks were made (the cpu's sample op:
// every pick in the decoder, none downloaded); batched decode is greedy, so sampling with
// --batch is an error naming both.
TEST(RunnerCli, BenchModelSamplesInTheDecoder) {
  const std::string dir = e2e::fresh_dir("runner", "bench_model_sampled");
  ASSERT_EQ(run_cli({"example", "--format", "gptq_asym4", "--out", dir}).exit_code, 0);
  const e2e::CliRun r =
      run_cli({"bench-model", "--model", dir, "--prompt-len", "8", "--gen-len", "4",
               "--temperature", "0.8", "--top-p", "0.9", "--repetition-penalty", "1.2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_DOUBLE_EQ(j["sampling"]["temperature"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["sampling"]["top_p"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(j["sampling"]["repetition_penalty"].get<double>(), 1.2);
  // Warm-up (2 tokens) and the run (4): a pick per token in the decoder, none on the host.
  EXPECT_EQ(j["sampled_where"], "device 6, host 0 (0 past the device's ordered candidates)")
      << r.out;
  // generate says the same: 5 tokens, each picked in the decoder (the prompt's last row, then 4
  // steps).
  const e2e::CliRun gen = run_cli({"generate", "--model", dir, "--prompt-ids", "1,2,3",
                                   "--max-tokens", "5", "--temperature", "0.9", "--json"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const auto g = nlohmann::json::parse(gen.out, nullptr, false);
  ASSERT_FALSE(g.is_discarded()) << gen.out;
  EXPECT_EQ(g["sampled_where"], "device 5, host 0 (0 past the device's ordered candidates)")
      << gen.out;
  const e2e::CliRun bad =
      run_cli({"bench-model", "--model", dir, "--batch", "2", "--temperature", "0.8"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--batch 2: batched decode is greedy"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace qlinear
