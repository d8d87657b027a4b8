// quantize -> the normal loader -> the weights within the format's rounding bound of the float
// weights, and the runner's logits within a documented bound of the float model's
// (docs/quantize.md), for every format; the folder rules and flag errors; the CLI round trip.
// The fixture is an untrained model with uniform weights (every linear layer amplifies its input
// ~2.3x), so its logits react far more to weight noise than a trained model's; the bounds are
// the measured deviations with a margin, and guard against regressions, not accuracy claims.
#include "quantize/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures/fixtures.h"
#include "model/decoder.h"
#include "qlinear/device.h"

namespace qlinear::quantize {
namespace {

namespace fs = std::filesystem;

// GPT-2's byte-to-unicode table: a byte-level BPE with no merges, so ids are the bytes (< 256,
// the fixture's vocabulary).
std::string byte_tokenizer_json() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
      bs.push_back(b);
      cs.push_back(256 + extra++);
    }
  }
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  std::vector<std::pair<int, std::string>> entries;
  for (size_t i = 0; i < bs.size(); ++i) {
    std::string utf8;
    const int c = cs[i];
    if (c < 0x80) {
      utf8 += static_cast<char>(c);
    } else {
      utf8 += static_cast<char>(0xC0 | (c >> 6));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    }
    entries.emplace_back(bs[i], utf8);
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& [id, tok] : entries) vocab[tok] = id;
  const nlohmann::ordered_json byte_level = {{"type", "ByteLevel"},
                                             {"add_prefix_space", false},
                                             {"trim_offsets", true},
                                             {"use_regex", true}};
  const nlohmann::ordered_json j = {{"version", "1.0"},
                                    {"truncation", nullptr},
                                    {"padding", nullptr},
                                    {"added_tokens", nlohmann::ordered_json::array()},
                                    {"normalizer", nullptr},
                                    {"pre_tokenizer", byte_level},
                                    {"post_processor", nullptr},
                                    {"decoder", byte_level},
                                    {"model",
                                     {{"type", "BPE"},
                                      {"dropout", nullptr},
                                      {"unk_token", nullptr},
                                      {"continuing_subword_prefix", nullptr},
                                      {"end_of_word_suffix", nullptr},
                                      {"fuse_unk", false},
                                      {"byte_fallback", false},
                                      {"ignore_merges", false},
                                      {"vocab", vocab},
                                      {"merges", nlohmann::ordered_json::array()}}}};
  return j.dump();
}

struct FloatModel {
  std::string dir;
  std::string calib;
  FixtureModel fixture;
};

const FloatModel& float_model() {
  static const FloatModel model = [] {
    FloatModel m;
    m.dir = std::string(QLINEAR_TEST_TMPDIR) + "/float";
    auto f = write_fixture(FixtureFormat::kUnquantized, m.dir);
    EXPECT_TRUE(f.ok()) << f.status().message();
    m.fixture = *f;
    std::ofstream(m.dir + "/tokenizer.json") << byte_tokenizer_json();
    m.calib = std::string(QLINEAR_TEST_TMPDIR) + "/calib.txt";
    std::ofstream calib(m.calib);
    for (int i = 0; i < 60; ++i) {
      calib << "In the beginning the quantizer met line " << i
            << " of its calibration text, and it was good. ";
    }
    return m;
  }();
  return model;
}

std::vector<float> run_logits(const std::string& dir, const std::vector<int32_t>& ids) {
  DecoderOptions o;
  o.progress = false;
  o.ctx = 128;
  auto cpu = detect_device("cpu");
  EXPECT_TRUE(cpu.ok());
  auto decoder = Decoder::load(dir, *cpu, o);
  EXPECT_TRUE(decoder.ok()) << decoder.status().message();
  if (!decoder.ok()) return {};
  const int64_t vocab = (*decoder)->config().vocab;
  auto logits = Tensor::allocate(DType::kF32, {static_cast<int64_t>(ids.size()), vocab});
  EXPECT_TRUE(logits.ok());
  EXPECT_TRUE((*decoder)->forward(ids, 0, true, logits->matrix()).ok());
  const float* p = logits->data_as<float>();
  return {p, p + ids.size() * static_cast<size_t>(vocab)};
}

std::vector<int32_t> probe_ids() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 37 + 11) % 256);
  return ids;
}

struct FormatCase {
  std::string label;
  OutputFormat format;
  bool calib = false;
  int bits = 0;
  int group = 0;
  std::optional<bool> sym;
  bool act_order = false;
  double max_weight_error;     // relative Frobenius, every layer
  double max_logit_error;      // relative RMS of the logits over the probe tokens
  bool rounding_bound = true;  // each weight within half a step of its grid (no GPTQ / AWQ)
};

std::ostream& operator<<(std::ostream& os, const FormatCase& c) { return os << c.label; }

// The float weight of an unfused layer name, or the concatenation of a fused one's shards.
std::vector<double> float_weight(const FixtureModel& m, const std::string& name) {
  std::vector<std::string> parts = {name};
  const auto swap = [&](const std::string& fused, std::vector<std::string> shards) {
    if (!name.ends_with(fused)) return;
    parts.clear();
    const std::string prefix = name.substr(0, name.size() - fused.size());
    for (const std::string& s : shards) parts.push_back(prefix + s);
  };
  swap("qkv_proj", {"q_proj", "k_proj", "v_proj"});
  swap("gate_up_proj", {"gate_proj", "up_proj"});
  std::vector<double> w;
  for (const std::string& p : parts) {
    const FixtureLayer* l = m.find(p);
    EXPECT_NE(l, nullptr) << p;
    if (l) w.insert(w.end(), l->weight.begin(), l->weight.end());
  }
  return w;
}

class QuantizeFormat : public testing::TestWithParam<FormatCase> {};

TEST_P(QuantizeFormat, LoadsWithinBoundsOfTheFloatModel) {
  const FormatCase c = GetParam();
  const FloatModel& fm = float_model();
  QuantizeOptions o;
  o.model_dir = fm.dir;
  o.out_dir = std::string(QLINEAR_TEST_TMPDIR) + "/q_" + c.label;
  o.format = c.format;
  o.bits = c.bits;
  o.group_size = c.group;
  o.sym = c.sym;
  o.act_order = c.act_order;
  o.progress = false;
  if (c.calib) o.calib_file = fm.calib;
  auto report = quantize_checkpoint(o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->layers.size(), 14u);
  EXPECT_EQ(report->notes.empty(), c.calib || c.format == OutputFormat::kCtFp8Dynamic ||
                                       c.format == OutputFormat::kFp8Block);
  for (const LayerReport& l : report->layers) {
    EXPECT_LE(l.weight_error, c.max_weight_error) << l.name;
    EXPECT_EQ(l.output_error >= 0, c.calib) << l.name;
  }
  EXPECT_TRUE(fs::exists(o.out_dir + "/tokenizer.json"));
  for (const auto& entry : fs::directory_iterator(o.out_dir)) {
    EXPECT_NE(entry.path().filename().string()[0], '.')
        << "a temporary file is left: " << entry.path();
  }

  // Through the normal loader.
  auto weights = checkpoint_weights(o.out_dir, "");
  ASSERT_TRUE(weights.ok()) << weights.status().message();
  int quantized = 0;
  const Status walked = (*weights)->for_each_linear([&](const Canonical& part, const std::string&) {
    if (part.name == "lm_head") {
      EXPECT_TRUE(std::holds_alternative<DenseWeights>(part.weights));
      return Status::ok_status();
    }
    ++quantized;
    const std::vector<double> w = float_weight(fm.fixture, part.name);
    const int64_t N = part.N();
    const int64_t K = part.K();
    EXPECT_EQ(static_cast<int64_t>(w.size()), N * K) << part.name;
    if (static_cast<int64_t>(w.size()) != N * K) return Status::ok_status();
    double err = 0;
    double norm = 0;
    int64_t outside = 0;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const double x = w[n * K + k];
        const double dq = part.dequant(n, k);
        err += (x - dq) * (x - dq);
        norm += x * x;
        if (!c.rounding_bound) continue;
        double bound = 0;
        if (const auto* iw = std::get_if<IntWeights>(&part.weights)) {
          const int64_t g = iw->group_of(k);
          const double s = iw->scales[g * N + n];
          const double z = iw->zero(g, n);
          const double lo = -z * s;
          const double hi = ((1 << iw->bits) - 1 - z) * s;
          bound = s / 2 + std::max({0.0, lo - x, x - hi}) + 1e-6 * s;
        } else if (const auto* fw = std::get_if<Fp8Weights>(&part.weights)) {
          // e4m3: 3 mantissa bits (half an ulp is 2^-4 relative), subnormal step 2^-9 * s.
          const double s = fw->weight_scale(n, k);
          bound = std::fabs(x) / 16 + s / 1024 + 1e-9;
        } else {
          ADD_FAILURE() << part.name << " is dense";
        }
        outside += std::fabs(x - dq) > bound;
      }
    }
    EXPECT_EQ(outside, 0) << part.name;
    EXPECT_LE(std::sqrt(err / norm), c.max_weight_error) << part.name;
    return Status::ok_status();
  });
  ASSERT_TRUE(walked.ok()) << walked.message();
  EXPECT_GT(quantized, 0);

  // Logits of the runner against the float model.
  const std::vector<float> ref = run_logits(fm.dir, probe_ids());
  const std::vector<float> got = run_logits(o.out_dir, probe_ids());
  ASSERT_EQ(ref.size(), got.size());
  double d2 = 0;
  double r2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    d2 += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    r2 += double(ref[i]) * ref[i];
  }
  const double rel = std::sqrt(d2 / r2);
  std::printf("[ %s ] logits relative RMS deviation %.5f\n", c.label.c_str(), rel);
  EXPECT_LE(rel, c.max_logit_error);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, QuantizeFormat,
    testing::Values(
        FormatCase{"awq_rtn", OutputFormat::kAwq, false, 0, 0, {}, false, 0.12, 0.65},
        FormatCase{"awq_calib", OutputFormat::kAwq, true, 0, 0, {}, false, 0.15, 0.65, false},
        FormatCase{"gptq_rtn", OutputFormat::kGptq, false, 0, 0, {}, false, 0.12, 0.65},
        FormatCase{"gptq_calib", OutputFormat::kGptq, true, 0, 0, {}, false, 0.15, 0.65, false},
        FormatCase{"gptq_act_order", OutputFormat::kGptq, true, 0, 64, {}, true, 0.15, 0.65, false},
        FormatCase{"gptq_8bit_asym", OutputFormat::kGptq, false, 8, 32, false, false, 0.01, 0.05},
        FormatCase{"autoround_sym", OutputFormat::kAutoRound, false, 0, 0, {}, false, 0.12, 0.65},
        FormatCase{"autoround_asym", OutputFormat::kAutoRound, false, 0, 0, false, false, 0.12,
                   0.65},
        FormatCase{"ct_w4a16", OutputFormat::kCtW4A16, false, 0, 0, {}, false, 0.12, 0.65},
        FormatCase{"ct_w4a16_asym_g32", OutputFormat::kCtW4A16, true, 0, 32, false, false, 0.12,
                   0.65, false},
        FormatCase{"ct_w4a16_act_order",
                   OutputFormat::kCtW4A16,
                   true,
                   0,
                   128,
                   {},
                   true,
                   0.15,
                   0.65,
                   false},
        FormatCase{"ct_w8a16_channel", OutputFormat::kCtW8A16, false, 0, -1, {}, false, 0.01, 0.05},
        FormatCase{
            "ct_fp8_dynamic", OutputFormat::kCtFp8Dynamic, false, 0, 0, {}, false, 0.05, 0.35},
        FormatCase{"ct_fp8_static", OutputFormat::kCtFp8Static, true, 0, 0, {}, false, 0.05, 0.35},
        FormatCase{"fp8_block", OutputFormat::kFp8Block, false, 0, 0, {}, false, 0.05, 0.35}),
    [](const testing::TestParamInfo<FormatCase>& p) { return p.param.label; });

Status quantize_into(const std::string& out, OutputFormat format, bool force = false,
                     std::vector<std::string> ignore = {}) {
  QuantizeOptions o;
  o.model_dir = float_model().dir;
  o.out_dir = out;
  o.format = format;
  o.force = force;
  o.ignore = std::move(ignore);
  o.progress = false;
  return quantize_checkpoint(o).status();
}

TEST(QuantizeFolder, RefusesANonEmptyOutUnlessForced) {
  const std::string out = std::string(QLINEAR_TEST_TMPDIR) + "/busy";
  fs::create_directories(out);
  std::ofstream(out + "/notes.txt") << "mine";
  std::ofstream(out + "/old.safetensors") << "stale";
  const Status refused = quantize_into(out, OutputFormat::kGptq);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("--force"), std::string::npos) << refused.message();
  ASSERT_TRUE(quantize_into(out, OutputFormat::kGptq, true).ok());
  EXPECT_TRUE(fs::exists(out + "/notes.txt"));         // not a checkpoint file: kept
  EXPECT_FALSE(fs::exists(out + "/old.safetensors"));  // would be read with ours: removed
  EXPECT_TRUE(fs::exists(out + "/quantize_config.json"));
  const Status same = quantize_into(float_model().dir, OutputFormat::kGptq, true);
  EXPECT_FALSE(same.ok());
}

TEST(QuantizeFolder, IgnoredLayersStayDenseAndAreListed) {
  const std::string out = std::string(QLINEAR_TEST_TMPDIR) + "/ignored";
  ASSERT_TRUE(quantize_into(out, OutputFormat::kCtW4A16, false, {"layers\\.1\\.mlp\\.down"}).ok());
  std::ifstream f(out + "/config.json");
  const auto config = nlohmann::json::parse(f);
  const auto& ignore = config["quantization_config"]["ignore"];
  EXPECT_NE(std::find(ignore.begin(), ignore.end(), "model.layers.1.mlp.down_proj"), ignore.end());
  auto weights = checkpoint_weights(out, "");
  ASSERT_TRUE(weights.ok());
  bool dense_down = false;
  ASSERT_TRUE((*weights)
                  ->for_each_linear([&](const Canonical& part, const std::string&) {
                    if (part.name == "model.layers.1.mlp.down_proj") {
                      dense_down = std::holds_alternative<DenseWeights>(part.weights);
                    }
                    return Status::ok_status();
                  })
                  .ok());
  EXPECT_TRUE(dense_down);
}

TEST(QuantizeErrors, NameTheFlagAndTheRule) {
  struct Bad {
    QuantizeOptions o;
    std::string mention;
  };
  auto make = [](OutputFormat f) {
    QuantizeOptions o;
    o.model_dir = float_model().dir;
    o.out_dir = std::string(QLINEAR_TEST_TMPDIR) + "/never";
    o.format = f;
    o.progress = false;
    return o;
  };
  std::vector<Bad> bad;
  bad.push_back({make(OutputFormat::kAwq), "--sym"});
  bad.back().o.sym = true;
  bad.push_back({make(OutputFormat::kGptq), "--act-order"});
  bad.back().o.act_order = true;
  bad.push_back({make(OutputFormat::kGptq), "--bits 3"});
  bad.back().o.bits = 3;
  bad.push_back({make(OutputFormat::kGptq), "--group 48"});
  bad.back().o.group_size = 48;
  bad.push_back({make(OutputFormat::kCtFp8Static), "--calib"});
  bad.push_back({make(OutputFormat::kGptq), "not a regular expression"});
  bad.back().o.ignore = {"(unclosed"};
  bad.push_back({make(OutputFormat::kGptq), "model.layers.0.self_attn.k_proj"});
  bad.back().o.ignore = {"layers\\.0\\.self_attn\\.k_proj"};
  for (const Bad& b : bad) {
    const auto r = quantize_checkpoint(b.o);
    ASSERT_FALSE(r.ok()) << b.mention;
    EXPECT_NE(r.status().message().find(b.mention), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(fs::exists(std::string(QLINEAR_TEST_TMPDIR) + "/never"));
  // A quantized checkpoint is not quantized again.
  const std::string out = std::string(QLINEAR_TEST_TMPDIR) + "/twice";
  ASSERT_TRUE(quantize_into(out, OutputFormat::kAwq).ok());
  QuantizeOptions again = make(OutputFormat::kGptq);
  again.model_dir = out;
  const auto r = quantize_checkpoint(again);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("already quantized"), std::string::npos);
}

#ifdef QLINEAR_CLI_PATH
int run_cli(const std::string& args) {
  const std::string cmd =
      std::string(QLINEAR_CLI_PATH) + " " + args + " > " + QLINEAR_TEST_TMPDIR + "/cli.out 2>&1";
  return std::system(cmd.c_str());
}

TEST(QuantizeCli, OutputRoundTripsThroughInspectAndGenerate) {
  const std::string out = std::string(QLINEAR_TEST_TMPDIR) + "/cli_gptq";
  ASSERT_EQ(run_cli("quantize --model " + float_model().dir + " --out " + out +
                    " --format gptq --calib " + float_model().calib + " --act-order --json"),
            0);
  std::ifstream summary(std::string(QLINEAR_TEST_TMPDIR) + "/cli.out");
  const auto j = nlohmann::json::parse(summary);
  EXPECT_EQ(j["format"], "gptq");
  EXPECT_EQ(j["layers"].size(), 14u);
  EXPECT_EQ(j["act_order"], true);
  EXPECT_EQ(run_cli("inspect --model " + out), 0);
  EXPECT_EQ(run_cli("generate --model " + out + " --prompt-ids 1,2,3 --max-tokens 4"), 0);
  EXPECT_NE(run_cli("quantize --model " + float_model().dir + " --out " + out + " --format gptq"),
            0);
}
#endif

}  // namespace
}  // namespace qlinear::quantize
