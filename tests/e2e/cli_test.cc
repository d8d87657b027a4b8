// The built `qlinear` binary, run as a user would: example, inspect (text and --json), and one
// error per corrupt fixture, asserting on exit codes and on what stderr names.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e_util.h"

namespace qlinear {
namespace {

using RunResult = e2e::CliRun;

RunResult run_cli(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string err_dir = e2e::fresh_dir("cli_stderr", std::to_string(counter++));
  std::filesystem::create_directories(err_dir);
  return e2e::run_cli(args, err_dir);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string write_example(FixtureFormat format) {
  const std::string dir = e2e::fresh_dir("cli", e2e::param_name(format));
  const RunResult r =
      run_cli({"example", "--format", std::string(fixture_format_name(format)), "--out", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

TEST(Cli, ExampleListsEveryFormat) {
  const RunResult r = run_cli({"example", "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (FixtureFormat f : all_fixture_formats()) {
    EXPECT_NE(r.out.find(std::string(fixture_format_name(f))), std::string::npos);
  }
}

TEST(Cli, ExampleJsonDescribesWhatItWrote) {
  const std::string dir = e2e::fresh_dir("cli", "example_json");
  const RunResult r = run_cli({"example", "--format", "gptq_act_order", "--out", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["format"], "gptq_act_order");
  EXPECT_EQ(j["layers"].size(), 15u);
  EXPECT_EQ(j["files"], nlohmann::json({"model.safetensors"}));
  std::ifstream config(dir + "/config.json");
  EXPECT_TRUE(config.good());
}

struct InspectCase {
  FixtureFormat format;
  int quantized_layers;  // of the 9 fused layers
};

TEST(Cli, InspectJsonReportsEveryLayer) {
  const std::vector<InspectCase> cases = {
      {FixtureFormat::kAwq, 8},         {FixtureFormat::kGptqActOrder, 8},
      {FixtureFormat::kGptqDynamic, 6}, {FixtureFormat::kAutoRoundGptq, 7},
      {FixtureFormat::kCtW4A16, 7},     {FixtureFormat::kCtW8A16AsymChannel, 8},
      {FixtureFormat::kCtFp8, 8},       {FixtureFormat::kFp8Block, 8},
      {FixtureFormat::kSharded, 8},     {FixtureFormat::kUnquantized, 0},
  };
  for (const InspectCase& tc : cases) {
    SCOPED_TRACE(e2e::param_name(tc.format));
    const std::string dir = write_example(tc.format);
    const RunResult r = run_cli({"inspect", "--model", dir, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["model"]["architecture"], "LlamaForCausalLM");
    EXPECT_EQ(j["model"]["hidden_size"], 256);
    EXPECT_EQ(j["model"]["num_hidden_layers"], 2);
    EXPECT_EQ(j["quantization"]["format"],
              std::string(quant_format_name(e2e::expected_quant_format(tc.format))));
    ASSERT_EQ(j["layers"].size(), 9u);
    EXPECT_EQ(j["layers"][0]["name"], "model.layers.0.self_attn.qkv_proj");
    EXPECT_EQ(j["layers"][0]["shards"].size(), 3u);
    EXPECT_EQ(j["layers"][8]["name"], "lm_head");
    EXPECT_EQ(j["layers"][8]["quantized"], false);
    int quantized = 0;
    uint64_t on_disk = 0;
    uint64_t bf16 = 0;
    for (const auto& layer : j["layers"]) {
      quantized += layer["quantized"].get<bool>() ? 1 : 0;
      if (!layer["quantized"].get<bool>()) {
        EXPECT_EQ(layer["kind"], "dense") << layer["name"];
        if (tc.format != FixtureFormat::kUnquantized) {
          EXPECT_FALSE(layer["skip_reason"].get<std::string>().empty()) << layer["name"];
        }
      }
      EXPECT_EQ(layer["bytes_bf16"], layer["N"].get<uint64_t>() * layer["K"].get<uint64_t>() * 2);
      on_disk += layer["bytes_on_disk"].get<uint64_t>();
      bf16 += layer["bytes_bf16"].get<uint64_t>();
    }
    EXPECT_EQ(quantized, tc.quantized_layers);
    EXPECT_EQ(j["totals"]["linear_layers"], 9);
    EXPECT_EQ(j["totals"]["bytes_on_disk"], on_disk);
    EXPECT_EQ(j["totals"]["bytes_bf16"], bf16);
    if (tc.quantized_layers > 0) {
      EXPECT_LT(on_disk, bf16);
    } else {
      EXPECT_EQ(on_disk, bf16);
    }
  }
}

TEST(Cli, InspectJsonStatesTheSchemeOfEachLayer) {
  {
    const auto j = nlohmann::json::parse(
        run_cli({"inspect", "--model", write_example(FixtureFormat::kGptqActOrder), "--json"}).out,
        nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    const auto& qkv = j["layers"][0];
    EXPECT_EQ(qkv["kind"], "int");
    EXPECT_EQ(qkv["bits"], 4);
    EXPECT_EQ(qkv["group_size"], 32);
    EXPECT_EQ(qkv["sym"], true);
    EXPECT_EQ(qkv["act_order"], true);
    EXPECT_EQ(qkv["N"], 512);
    EXPECT_EQ(qkv["K"], 256);
  }
  {
    const auto j = nlohmann::json::parse(
        run_cli({"inspect", "--model", write_example(FixtureFormat::kCtW8A16AsymChannel), "--json"})
            .out,
        nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    const auto& down = j["layers"][3];
    EXPECT_EQ(down["name"], "model.layers.0.mlp.down_proj");
    EXPECT_EQ(down["bits"], 8);
    EXPECT_EQ(down["sym"], false);
    EXPECT_EQ(down["channelwise"], true);
    EXPECT_EQ(down["group"], "channel (K=512)");
  }
  {
    const auto j = nlohmann::json::parse(
        run_cli({"inspect", "--model", write_example(FixtureFormat::kCtFp8Block), "--json"}).out,
        nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    const auto& gate_up = j["layers"][2];
    EXPECT_EQ(gate_up["kind"], "fp8");
    EXPECT_EQ(gate_up["fp8_weight"], "block");
    EXPECT_EQ(gate_up["fp8_block"], nlohmann::json({128, 128}));
    EXPECT_EQ(gate_up["activation"], std::string(act_quant_name(ActQuant::kDynamicGroup)));
  }
}

TEST(Cli, InspectTextShowsModelQuantizationAndLayers) {
  const RunResult r = run_cli({"inspect", "--model", write_example(FixtureFormat::kAwq)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"LlamaForCausalLM", "config.json", "model.layers.1.mlp.gate_up_proj",
                           "lm_head", "totals", "skipped"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
}

TEST(Cli, InspectOnlineFp8) {
  const std::string dir = write_example(FixtureFormat::kUnquantized);
  const RunResult r = run_cli({"inspect", "--model", dir, "--json", "--quantization", "fp8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["quantization"]["format"], std::string(quant_format_name(QuantFormat::kOnlineFp8)));
  EXPECT_EQ(j["quantization"]["source"], "--quantization fp8");
  EXPECT_EQ(j["layers"][0]["kind"], "fp8");
  EXPECT_EQ(j["layers"][8]["kind"], "dense");
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_cli({}).exit_code, 2);
  EXPECT_EQ(run_cli({"inspect"}).exit_code, 2);
  EXPECT_EQ(run_cli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(run_cli({"example"}).exit_code, 2) << "--out is required";
  EXPECT_EQ(run_cli({"example", "--format", "nope", "--out", "/tmp/x"}).exit_code, 2);
  EXPECT_EQ(run_cli({"inspect", "--model", "/tmp", "--quantization", "int3"}).exit_code, 2);
  EXPECT_EQ(run_cli({"--help"}).exit_code, 0);
}

TEST(Cli, MissingModelDirectoryIsAnInputError) {
  const std::string dir = e2e::fresh_dir("cli", "does_not_exist");
  const RunResult r = run_cli({"inspect", "--model", dir});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("qlinear: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;
}

class CliCorrupt : public ::testing::TestWithParam<CorruptKind> {};

TEST_P(CliCorrupt, FailsWithAMessageNamingTheDefect) {
  const CorruptKind kind = GetParam();
  auto fixture = write_corrupt_fixture(
      kind, e2e::fresh_dir("cli_corrupt", std::string(corrupt_kind_name(kind))));
  ASSERT_TRUE(fixture.ok()) << fixture.status().to_string();
  const RunResult r = run_cli({"inspect", "--model", fixture->dir, "--json"});
  EXPECT_EQ(r.exit_code, 1) << fixture->defect << "\nstdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("qlinear: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
  for (const std::string& mention : fixture->mentions) {
    EXPECT_NE(lower(r.err).find(lower(mention)), std::string::npos)
        << "defect: " << fixture->defect << "\nstderr must name \"" << mention << "\":\n"
        << r.err;
  }
  if (kind == CorruptKind::kBits3) {
    EXPECT_TRUE(std::regex_search(r.err, std::regex("bits\\W{0,4}3"))) << r.err;
  }
  EXPECT_TRUE(r.out.empty()) << "no report on failure: " << r.out;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, CliCorrupt, ::testing::ValuesIn(all_corrupt_kinds()),
                         [](const auto& p) { return std::string(corrupt_kind_name(p.param)); });

}  // namespace
}  // namespace qlinear
