// `qlinear explain` and `qlinear layer`, run as a user would. explain is checked for its shape
// (one row per fused layer, a kernel or an error each) and for the FP8 mode table on simulated
// devices; layer's output is checked against a float64 product computed here from the fixture's
// known dequantized weights, on every fixture format, under every backend and CPU kernel that
// accepts the layer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <span>
#include <sstream>

#include "e2e_util.h"
#include "io/safetensors.h"
#include "kernels/opencl/opencl_kernel.h"
#include "qlinear/dtype.h"

namespace qlinear {
namespace {

using RunResult = e2e::CliRun;

std::string test_dir(const std::string& group) {
  static int counter = 0;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info == nullptr ? std::string("suite")
                                     : std::string(info->test_suite_name()) + "." + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string dir = e2e::fresh_dir(
      group, name + "." + std::to_string(getpid()) + "." + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  return dir;
}

RunResult run_cli(const std::vector<std::string>& args, const std::string& disabled = "") {
  return e2e::run_cli(args, test_dir("explain_layer_stderr"), disabled);
}

nlohmann::json explain_json(const std::string& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"explain", "--model", dir, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const nlohmann::json* find_row(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& row : report["layers"]) {
    if (row["name"] == name) return &row;
  }
  return nullptr;
}

// The fused layer a (fused or unfused) name belongs to, with its fixture shards.
struct LayerUnderTest {
  std::string name;                           // as passed to --name
  std::string fused;                          // the layer that runs
  std::vector<const FixtureLayer*> expected;  // the shards whose rows make up y
  std::vector<const FixtureLayer*> fused_shards;
};

LayerUnderTest layer_under_test(const FixtureModel& model, const std::string& name) {
  LayerUnderTest t;
  t.name = name;
  for (const e2e::FusedLayer& fused : e2e::expected_fused_layers(model)) {
    const bool whole = fused.name == name;
    const bool shard =
        std::find(fused.shards.begin(), fused.shards.end(), name) != fused.shards.end();
    if (!whole && !shard) continue;
    t.fused = fused.name;
    for (const std::string& s : fused.shards) {
      const FixtureLayer* layer = model.find(s);
      EXPECT_NE(layer, nullptr) << s;
      if (layer == nullptr) continue;
      t.fused_shards.push_back(layer);
      if (whole || s == name) t.expected.push_back(layer);
    }
  }
  return t;
}

struct Input {
  int64_t M = 0;
  int64_t K = 0;
  std::vector<double> values;  // as the kernel reads them (bf16-rounded for bf16 inputs)
};

// Random x [M, K] written as tensor "x" in `dtype` (f32 or bf16).
Input write_input(const std::string& path, int64_t M, int64_t K, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Input in{M, K, {}};
  std::vector<float> f32(static_cast<size_t>(M * K));
  std::vector<uint16_t> bf16(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    f32[i] = dist(rng);
    bf16[i] = f32_to_bf16(f32[i]);
    in.values.push_back(dtype == DType::kBF16 ? bf16_to_f32(bf16[i]) : f32[i]);
  }
  SafetensorsWriter writer;
  if (dtype == DType::kBF16) {
    writer.add_values("x", DType::kBF16, {M, K}, bf16);
  } else {
    writer.add_values("x", DType::kF32, {M, K}, f32);
  }
  EXPECT_TRUE(writer.write(path).ok()) << path;
  return in;
}

// formats.md §4.3 with F = 448 and the 1/(F*512) floor: the activations a W8A8 kernel multiplies,
// dequantized (q * s). Per-token and per-group divide; per-tensor and static multiply by 1/s.
std::vector<double> fp8_activations(const Input& in, const FixtureLayer& layer,
                                    double input_scale) {
  constexpr float kMax = 448.0f;
  constexpr float kFloor = 1.0f / (448.0f * 512.0f);
  const ActQuant act = layer.spec.activation;
  const int64_t group =
      act == ActQuant::kDynamicGroup ? (layer.spec.block_k > 0 ? layer.spec.block_k : 128) : in.K;
  std::vector<double> out(in.values.size());
  float tensor_scale = static_cast<float>(input_scale);
  if (act == ActQuant::kDynamicTensor) {
    float amax = 0.0f;
    for (double v : in.values) amax = std::max(amax, std::fabs(static_cast<float>(v)));
    tensor_scale = std::max(amax / kMax, kFloor);
  }
  for (int64_t m = 0; m < in.M; ++m) {
    for (int64_t k0 = 0; k0 < in.K; k0 += group) {
      const int64_t k1 = std::min(in.K, k0 + group);
      float scale = tensor_scale;
      const bool divide = act == ActQuant::kDynamicToken || act == ActQuant::kDynamicGroup;
      if (divide) {
        float amax = 0.0f;
        for (int64_t k = k0; k < k1; ++k) {
          amax = std::max(amax, std::fabs(static_cast<float>(in.values[m * in.K + k])));
        }
        scale = std::max(amax / kMax, kFloor);
      }
      const float inverse = 1.0f / scale;
      for (int64_t k = k0; k < k1; ++k) {
        const float x = static_cast<float>(in.values[m * in.K + k]);
        const float q = f8e4m3_to_f32(f32_to_f8e4m3(divide ? x / scale : x * inverse));
        out[m * in.K + k] = static_cast<double>(q) * scale;
      }
    }
  }
  return out;
}

// y = x W^T over the expected shards' rows, in float64. `w8a8`: activations as the kernel
// quantizes them.
std::vector<double> reference_output(const Input& in, const LayerUnderTest& t, bool w8a8) {
  std::vector<double> x = in.values;
  if (w8a8) {
    const FixtureLayer& first = *t.fused_shards.front();
    double input_scale = 0.0;  // static: one scale for the fused layer, the max of its shards
    for (const FixtureLayer* s : t.fused_shards)
      input_scale = std::max(input_scale, s->input_scale);
    x = fp8_activations(in, first, input_scale);
  }
  std::vector<double> y;
  for (int64_t m = 0; m < in.M; ++m) {
    for (const FixtureLayer* layer : t.expected) {
      for (int64_t n = 0; n < layer->N; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < in.K; ++k) acc += x[m * in.K + k] * layer->at(n, k);
        y.push_back(acc);
      }
    }
  }
  return y;
}

FixtureModel make_fixture(FixtureFormat format) {
  const std::string dir = test_dir("explain_layer");
  Result<FixtureModel> model = write_fixture(format, dir);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : FixtureModel{};
}

bool has_fp8(const FixtureModel& model) {
  return std::any_of(model.layers.begin(), model.layers.end(),
                     [](const FixtureLayer& l) { return l.spec.fp8; });
}

class ExplainLayer : public ::testing::TestWithParam<FixtureFormat> {};

// Every row of an explain report: a fused layer, a scheme, the mode table's answer, and either a
// kernel (never also listed as rejected) or the no-kernel error.
void check_report(const nlohmann::json& report, const FixtureModel& model, bool must_run) {
  ASSERT_TRUE(report.contains("device") && report["device"].is_string());
  ASSERT_TRUE(report["layers"].is_array());
  std::multiset<std::string> names;
  for (const nlohmann::json& row : report["layers"]) names.insert(row["name"].get<std::string>());
  std::multiset<std::string> expected;
  for (const e2e::FusedLayer& f : e2e::expected_fused_layers(model)) expected.insert(f.name);
  EXPECT_EQ(names, expected);
  for (const nlohmann::json& row : report["layers"]) {
    SCOPED_TRACE(row["name"].get<std::string>());
    const std::string kernel = row["kernel"];
    const bool has_error = row.contains("error") && !row["error"].get<std::string>().empty();
    EXPECT_NE(kernel.empty(), !has_error) << row.dump();
    if (must_run) {
      EXPECT_FALSE(kernel.empty()) << row.dump();
    }
    EXPECT_FALSE(row["scheme"].get<std::string>().empty());
    for (const nlohmann::json& r : row["rejected"]) {
      EXPECT_NE(r["kernel"], kernel);
      EXPECT_FALSE(r["reason"].get<std::string>().empty());
    }
  }
}

// The FP8 mode of every fused layer: none for non-FP8 layers; W8A16 when the checkpoint leaves
// activations alone; otherwise as `quantized_mode` says (the platform's rule).
// `bucket` < 0: the row's mode (its first M bucket's); else that bucket's (counted from the end
// when negative below -1: -2 is the last).
void check_modes(const nlohmann::json& report, const FixtureModel& model,
                 const std::string& quantized_mode, int bucket = -1) {
  for (const e2e::FusedLayer& f : e2e::expected_fused_layers(model)) {
    const nlohmann::json* row = find_row(report, f.name);
    ASSERT_NE(row, nullptr) << f.name;
    const FixtureLayer* first = model.find(f.shards.front());
    ASSERT_NE(first, nullptr) << f.shards.front();
    SCOPED_TRACE(f.name);
    if (!first->spec.fp8) {
      EXPECT_EQ((*row)["mode"], "none");
      EXPECT_EQ((*row)["mode_reason"], "");
    } else if (first->spec.activation == ActQuant::kNone) {
      EXPECT_EQ((*row)["mode"], "w8a16");
    } else if (bucket == -1) {
      EXPECT_EQ((*row)["mode"], quantized_mode) << (*row)["mode_reason"];
      EXPECT_FALSE((*row)["mode_reason"].get<std::string>().empty());
    } else {
      const nlohmann::json& sels = (*row)["selections"];
      ASSERT_FALSE(sels.empty());
      const int n = static_cast<int>(sels.size());
      const nlohmann::json& sel =
          sels[static_cast<std::size_t>(bucket >= 0 ? bucket : n + 1 + bucket)];
      EXPECT_EQ(sel["mode"], quantized_mode) << sel["mode_reason"];
      EXPECT_FALSE(sel["mode_reason"].get<std::string>().empty());
    }
  }
}

TEST_P(ExplainLayer, ExplainJsonHasOneRowPerFusedLayer) {
  const FixtureModel model = make_fixture(GetParam());
  ASSERT_FALSE(model.dir.empty());
  // On this machine the reference kernels take whatever nothing faster takes.
  check_report(explain_json(model.dir, {}), model, /*must_run=*/true);
  check_report(explain_json(model.dir, {"--target", "cuda:sm90"}), model, false);
  const nlohmann::json xpu = explain_json(model.dir, {"--target", "xpu"});
  check_report(xpu, model, false);
  EXPECT_NE(xpu["device"].get<std::string>().find("simulated"), std::string::npos);
  // The OpenCL rows of the FP8 mode table: W8A16 by default, W8A8 forced by native or blas.
  check_modes(xpu, model, "w8a16");
  const nlohmann::json native =
      explain_json(model.dir, {"--target", "xpu", "--linear-backend", "native"});
  check_report(native, model, false);
  check_modes(native, model, "w8a8");
  // A native-only policy never lists a reference or blas kernel as the choice.
  for (const nlohmann::json& row : native["layers"]) {
    const std::string kernel = row["kernel"];
    EXPECT_TRUE(kernel.empty() || (kernel.find("reference") == std::string::npos &&
                                   kernel.find("blas") == std::string::npos))
        << kernel;
  }
  if (has_fp8(model)) {
    // sm90 has FP8 tensor cores: checkpoints that quantize activations run W8A8 there from the
    // prefill bucket on; decode (M <= 16) runs their FP8 weights as W8A16 on the mma kernel.
    const nlohmann::json sm90 = explain_json(model.dir, {"--target", "cuda:sm90"});
    check_modes(sm90, model, "w8a8", /*bucket=*/-2);
    check_modes(sm90, model, "w8a16", /*bucket=*/0);
  }
}

// The seed behaviours on simulated Intel GPUs: AWQ and AutoRound W4A16 (symmetric, and
// channelwise W8) are converted to the canonical int form and get the Intel subgroup kernel
// through the same selector as GPTQ; FP8 runs W8A16 on the subgroup kernel by default and W8A8
// under --linear-backend native: on the DPAS kernel where the GPU has XMX (Xe-HPG), on the
// portable kernel on an Xe-LP target; block FP8 weights never reach DPAS. PoCL (no subgroups, no
// fp16) gets the portable kernels and lists every Intel kernel with a capability reason.
struct IntelCase {
  FixtureFormat format;
  std::string target;
  std::vector<std::string> flags;
  std::string kernel;  // of every quantized layer
};

TEST(ExplainIntel, SeedFormatsSelectTheIntelKernels) {
  const std::vector<IntelCase> cases = {
      {FixtureFormat::kAwq, "xpu", {}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kAutoRoundGptq, "xpu", {}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kAutoRoundGptq, "xpu", {"--tp", "2"}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kAutoRoundAwq, "opencl:intel-xe-lp", {}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kCtW8A16AsymChannel, "xpu", {}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kGptqActOrder, "xpu", {}, "opencl.int.subgroup.intel"},
      {FixtureFormat::kCtFp8, "xpu", {}, "opencl.fp8.w8a16.subgroup.intel"},
      {FixtureFormat::kCtFp8, "xpu", {"--linear-backend", "native"}, "opencl.fp8.w8a8.dpas.intel"},
      {FixtureFormat::kCtFp8Dynamic,
       "opencl:intel-gpu",
       {"--linear-backend", "native"},
       "opencl.fp8.w8a8.dpas.intel"},
      {FixtureFormat::kCtFp8,
       "opencl:intel-xe-lp",
       {"--linear-backend", "native"},
       "opencl.fp8.w8a8.portable"},
      {FixtureFormat::kFp8Block, "xpu", {}, "opencl.fp8.w8a16.subgroup.intel"},
      {FixtureFormat::kFp8Block, "xpu", {"--linear-backend", "native"}, "opencl.fp8.w8a8.portable"},
      {FixtureFormat::kAwq, "opencl:pocl", {}, "opencl.int.gemm.portable"},
      {FixtureFormat::kCtFp8, "opencl:pocl", {}, "opencl.fp8.w8a16.portable"},
  };
  const std::set<std::string> intel = {
      "opencl.int.subgroup.intel", "opencl.fp8.w8a16.subgroup.intel", "opencl.fp8.w8a8.dpas.intel"};
  for (const IntelCase& c : cases) {
    const FixtureModel model = make_fixture(c.format);
    ASSERT_FALSE(model.dir.empty());
    std::vector<std::string> flags = {"--target", c.target};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    const nlohmann::json report = explain_json(model.dir, flags);
    SCOPED_TRACE(e2e::param_name(c.format) + " --target " + c.target + " " +
                 (c.flags.empty() ? "" : c.flags.front() + " " + c.flags.back()));
    int quantized = 0;
    for (const e2e::FusedLayer& f : e2e::expected_fused_layers(model)) {
      const FixtureLayer* first = model.find(f.shards.front());
      ASSERT_NE(first, nullptr);
      if (!first->spec.quantized) continue;
      const nlohmann::json* row = find_row(report, f.name);
      ASSERT_NE(row, nullptr) << f.name;
      ++quantized;
      for (const nlohmann::json& bucket : (*row)["buckets"]) {
        EXPECT_EQ(bucket["kernel"], c.kernel) << f.name << ": " << row->dump();
      }
      if (c.target != "opencl:pocl") continue;
      std::set<std::string> refused;  // the Intel kernels, each with a capability reason
      for (const nlohmann::json& r : (*row)["rejected"]) {
        const std::string reason = r["reason"];
        if (intel.count(r["kernel"]) != 0 && reason.find("capability") != std::string::npos) {
          refused.insert(r["kernel"]);
        }
      }
      if (first->spec.fp8) {
        EXPECT_EQ(refused.count("opencl.fp8.w8a16.subgroup.intel"), 1u) << row->dump();
        EXPECT_EQ(refused.count("opencl.fp8.w8a8.dpas.intel"), 1u) << row->dump();
      } else {
        EXPECT_EQ(refused.count("opencl.int.subgroup.intel"), 1u) << row->dump();
      }
    }
    EXPECT_GT(quantized, 0);
  }
}

struct LayerRun {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::string> flags;  // --linear-backend / --kernel
};

// Runs `layer` and compares y against the float64 reference; returns the kernel it reported.
std::string run_and_check(const FixtureModel& model, const LayerRun& run, uint32_t seed) {
  const LayerUnderTest t = layer_under_test(model, run.name);
  EXPECT_FALSE(t.expected.empty()) << run.name;
  if (t.expected.empty()) return "";
  const std::string dir = test_dir("explain_layer_io");
  const int64_t M = 5;
  const Input in = write_input(dir + "/x.safetensors", M, t.expected.front()->K, run.dtype, seed);
  std::vector<std::string> args = {"layer",
                                   "--model",
                                   model.dir,
                                   "--name",
                                   run.name,
                                   "--input",
                                   dir + "/x.safetensors",
                                   "--output",
                                   dir + "/y.safetensors",
                                   "--threads",
                                   "2"};
  args.insert(args.end(), run.flags.begin(), run.flags.end());
  const RunResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return "";
  // "qlinear: layer NAME: kernel KERNEL (problem PROBLEM...)"
  const std::string prefix = "qlinear: layer " + run.name + ": kernel ";
  const size_t at = r.err.find(prefix);
  EXPECT_NE(at, std::string::npos) << r.err;
  if (at == std::string::npos) return "";
  const size_t begin = at + prefix.size();
  const std::string kernel = r.err.substr(begin, r.err.find(' ', begin) - begin);
  const bool w8a8 = r.err.find(":w8a8:", begin) != std::string::npos;

  Result<std::shared_ptr<const SafetensorsFile>> file =
      SafetensorsFile::open(dir + "/y.safetensors");
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return kernel;
  const TensorInfo* y = (*file)->find("y");
  EXPECT_NE(y, nullptr);
  if (y == nullptr) return kernel;
  int64_t N = 0;
  for (const FixtureLayer* l : t.expected) N += l->N;
  EXPECT_EQ(y->dtype, DType::kF32);
  EXPECT_EQ(y->shape, (Shape{M, N}));
  if (y->dtype != DType::kF32 || y->shape != Shape{M, N}) return kernel;
  const std::vector<double> expected = reference_output(in, t, w8a8);
  const std::span<const std::byte> bytes = (*file)->data(*y);
  double diff = 0.0;
  double norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    float v = 0.0f;
    std::memcpy(&v, bytes.data() + i * sizeof(float), sizeof(float));
    diff += (v - expected[i]) * (v - expected[i]);
    norm += expected[i] * expected[i];
  }
  EXPECT_GT(norm, 0.0);
  EXPECT_LT(std::sqrt(diff / norm), 1e-2) << run.name << " kernel " << kernel << " dtype "
                                          << dtype_name(run.dtype) << (w8a8 ? " w8a8" : "");
  return kernel;
}

TEST_P(ExplainLayer, LayerMatchesFloat64Reference) {
  const FixtureModel model = make_fixture(GetParam());
  ASSERT_FALSE(model.dir.empty());
  const std::vector<std::string> names = {
      "model.layers.0.self_attn.qkv_proj", "model.layers.1.mlp.down_proj",
      "model.layers.0.self_attn.k_proj", "model.layers.1.mlp.up_proj"};
  uint32_t seed = 1;
  for (const std::string& name : names) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      run_and_check(model, {name, dtype, {}}, seed++);
    }
  }
  // Each backend family on its own, on a fused and a row-parallel layer.
  for (const std::string& name : {names[0], names[1]}) {
    const std::string reference =
        run_and_check(model, {name, DType::kBF16, {"--linear-backend", "reference"}}, seed++);
    EXPECT_EQ(reference.rfind("reference.", 0), 0u) << reference;
    const std::string blas =
        run_and_check(model, {name, DType::kF32, {"--linear-backend", "blas"}}, seed++);
    EXPECT_NE(blas.find(".blas."), std::string::npos) << blas;
  }
  // Every CPU kernel explain says accepts the layer, forced with --kernel.
  const nlohmann::json report = explain_json(model.dir, {});
  for (const std::string& name : {names[0], names[1]}) {
    const nlohmann::json* row = find_row(report, name);
    ASSERT_NE(row, nullptr) << name;
    std::vector<std::string> accepting = {(*row)["kernel"].get<std::string>()};
    for (const nlohmann::json& k : (*row)["also_accepted"]) accepting.push_back(k);
    for (const std::string& kernel : accepting) {
      if (kernel.rfind("cpu.", 0) != 0) continue;
      const std::string used =
          run_and_check(model, {name, DType::kBF16, {"--kernel", kernel}}, seed++);
      EXPECT_EQ(used, kernel);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ExplainLayer, ::testing::ValuesIn(all_fixture_formats()),
                         [](const ::testing::TestParamInfo<FixtureFormat>& param) {
                           return e2e::param_name(param.param);
                         });

// --- errors -------------------------------------------------------------------------------

class ExplainLayerErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new FixtureModel(make_fixture(FixtureFormat::kAwq)); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  // Runs `layer` on qkv_proj with extra flags and an input written by `write`.
  static RunResult run_layer(const std::vector<std::string>& extra, const std::string& input,
                             const std::string& disabled = "") {
    std::vector<std::string> args = {"layer",
                                     "--model",
                                     model_->dir,
                                     "--name",
                                     "model.layers.0.self_attn.qkv_proj",
                                     "--input",
                                     input,
                                     "--output",
                                     input + ".y.safetensors"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, disabled);
  }
  static std::string good_input() {
    const std::string dir = test_dir("explain_layer_errors");
    write_input(dir + "/x.safetensors", 2, 256, DType::kF32, 7);
    return dir + "/x.safetensors";
  }
  static FixtureModel* model_;
};
FixtureModel* ExplainLayerErrors::model_ = nullptr;

void expect_error(const RunResult& r, const std::vector<std::string>& mentions) {
  EXPECT_NE(r.exit_code, 0);
  for (const std::string& m : mentions)
    EXPECT_NE(r.err.find(m), std::string::npos) << m << "\n" << r.err;
}

TEST_F(ExplainLayerErrors, MissingXTensor) {
  const std::string dir = test_dir("explain_layer_errors");
  SafetensorsWriter writer;
  writer.add_values("input", DType::kF32, {1, 256}, std::vector<float>(256, 1.0f));
  ASSERT_TRUE(writer.write(dir + "/x.safetensors").ok());
  expect_error(run_layer({}, dir + "/x.safetensors"),
               {"x.safetensors", "no tensor \"x\"", "\"input\""});
}

TEST_F(ExplainLayerErrors, WrongK) {
  const std::string dir = test_dir("explain_layer_errors");
  write_input(dir + "/x.safetensors", 3, 100, DType::kF32, 3);
  expect_error(run_layer({}, dir + "/x.safetensors"),
               {"x.safetensors", "\"x\"", "[3, 100]", "K=256", "qkv_proj"});
}

TEST_F(ExplainLayerErrors, WrongRank) {
  const std::string dir = test_dir("explain_layer_errors");
  SafetensorsWriter writer;
  writer.add_values("x", DType::kF32, {256}, std::vector<float>(256, 1.0f));
  ASSERT_TRUE(writer.write(dir + "/x.safetensors").ok());
  expect_error(run_layer({}, dir + "/x.safetensors"), {"\"x\"", "[256]", "K=256"});
}

TEST_F(ExplainLayerErrors, UnknownLayerNameListsCloseNames) {
  const RunResult r =
      run_cli({"layer", "--model", model_->dir, "--name", "model.layers.0.self_attn.qkv_prj",
               "--input", good_input(), "--output", "/dev/null"});
  expect_error(r, {"model.layers.0.self_attn.qkv_prj", "no linear layer",
                   "model.layers.0.self_attn.qkv_proj"});
}

TEST_F(ExplainLayerErrors, UnknownKernel) {
  expect_error(run_layer({"--kernel", "cpu.w5a16.nope"}, good_input()),
               {"--kernel \"cpu.w5a16.nope\" is not a registered kernel", "cpu.w4a16.avx2"});
  const RunResult r = run_cli({"explain", "--model", model_->dir, "--kernel", "cpu.w5a16.nope"});
  expect_error(r, {"cpu.w5a16.nope"});
}

TEST_F(ExplainLayerErrors, DisabledKernelsWithUnknownName) {
  expect_error(run_layer({}, good_input(), "cpu.int.generic, bogus.kernel"),
               {"QLINEAR_DISABLED_KERNELS", "\"bogus.kernel\""});
  const RunResult r = run_cli({"explain", "--model", model_->dir}, "bogus.kernel");
  expect_error(r, {"QLINEAR_DISABLED_KERNELS", "\"bogus.kernel\""});
}

TEST_F(ExplainLayerErrors, DisabledKernelIsRejectedWithItsReason) {
  const nlohmann::json before = explain_json(model_->dir, {});
  const nlohmann::json* row = find_row(before, "model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(row, nullptr);
  const std::string chosen = (*row)["kernel"];
  ASSERT_FALSE(chosen.empty());
  const RunResult r = run_cli({"explain", "--model", model_->dir, "--json"}, chosen);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json after = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(after.is_discarded());
  const nlohmann::json* row_after = find_row(after, "model.layers.0.self_attn.qkv_proj");
  ASSERT_NE(row_after, nullptr);
  EXPECT_NE((*row_after)["kernel"], chosen);
  bool listed = false;
  for (const nlohmann::json& rej : (*row_after)["rejected"]) {
    if (rej["kernel"] != chosen) continue;
    listed = true;
    EXPECT_NE(rej["reason"].get<std::string>().find("QLINEAR_DISABLED_KERNELS"), std::string::npos);
  }
  EXPECT_TRUE(listed);
}

// --int8-activations is opt-in: without it no layer runs int8 activations; with it every int
// layer does (on an avx512 target the VNNI kernel; the rest say why not), explain shows the mode
// and why, and `layer` runs it on this machine with the problem string carrying "a8".
TEST_F(ExplainLayerErrors, Int8ActivationsAreOptInAndShownByExplain) {
  const nlohmann::json plain = explain_json(model_->dir, {"--target", "cpu:avx512"});
  for (const nlohmann::json& row : plain["layers"]) {
    EXPECT_EQ(row["mode"], "none") << row.dump();
    EXPECT_EQ(row["problem"].get<std::string>().find(":a8"), std::string::npos) << row.dump();
  }
  const nlohmann::json a8 =
      explain_json(model_->dir, {"--target", "cpu:avx512", "--int8-activations"});
  int int_layers = 0;
  for (const nlohmann::json& row : a8["layers"]) {
    if (row["scheme"].get<std::string>().rfind("dense", 0) == 0) {
      EXPECT_EQ(row["mode"], "none") << row.dump();  // lm_head: float weights ignore the flag
      continue;
    }
    ++int_layers;
    EXPECT_EQ(row["mode"], "a8") << row.dump();
    EXPECT_EQ(row["kernel"], "cpu.w4a8.avx512vnni") << row.dump();
    EXPECT_NE(row["mode_reason"].get<std::string>().find("--int8-activations"), std::string::npos);
    EXPECT_NE(row["problem"].get<std::string>().find(":a8"), std::string::npos);
    EXPECT_EQ(row["scheme"].get<std::string>().rfind("w4a8", 0), 0u) << row["scheme"];
  }
  EXPECT_GT(int_layers, 0);
  const RunResult text =
      run_cli({"explain", "--model", model_->dir, "--target", "cpu:avx512", "--int8-activations"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("int activations a8: int8 activations"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cpu.w4a16.avx512"), std::string::npos) << text.out;  // rejected, why

  const RunResult run = run_layer({"--int8-activations"}, good_input());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find(":a8:"), std::string::npos) << run.err;
}

// On an AVX2 target without avx512_vnni the mode runs cpu.int.a8.avx2 for decode and prefill up
// to 128 rows; without the flag that kernel is listed as rejected with activation-quant.
TEST_F(ExplainLayerErrors, Int8ActivationsOnAvx2SelectTheAvx2Kernel) {
  // The selection of the bucket holding M = 1.
  auto decode = [](const nlohmann::json& row) -> const nlohmann::json& {
    for (const nlohmann::json& sel : row["selections"]) {
      if (sel["m_min"].get<int64_t>() <= 1) return sel;
    }
    return row;
  };
  const nlohmann::json plain = explain_json(model_->dir, {"--target", "cpu:avx2"});
  const nlohmann::json a8 =
      explain_json(model_->dir, {"--target", "cpu:avx2", "--int8-activations"});
  int int_layers = 0;
  for (const nlohmann::json& row : plain["layers"]) {
    if (row["scheme"].get<std::string>().rfind("dense", 0) == 0) continue;
    const nlohmann::json& sel = decode(row);
    EXPECT_NE(sel["kernel"], "cpu.int.a8.avx2") << row.dump();
    bool listed = false;
    for (const nlohmann::json& rej : sel["rejected"]) {
      if (rej["kernel"] != "cpu.int.a8.avx2") continue;
      listed = true;
      EXPECT_EQ(rej["reason"].get<std::string>().rfind("activation-quant", 0), 0u) << rej.dump();
    }
    EXPECT_TRUE(listed) << row.dump();
  }
  for (const nlohmann::json& row : a8["layers"]) {
    if (row["scheme"].get<std::string>().rfind("dense", 0) == 0) continue;
    ++int_layers;
    const nlohmann::json& sel = decode(row);
    EXPECT_EQ(sel["kernel"], "cpu.int.a8.avx2") << row.dump();
    EXPECT_EQ(sel["mode"], "a8") << row.dump();
    EXPECT_EQ(sel["m_max"], 128) << row.dump();
  }
  EXPECT_GT(int_layers, 0);
}

// On a CPU with AMX the int layers run the AMX kernel from M = 16 (a full tile of rows) and the
// avx512 kernel below it, and explain says why each range went where; without AMX (cpu:avx512)
// the AMX kernel is listed as rejected for the missing ISA.
TEST_F(ExplainLayerErrors, AmxTargetSplitsTheMRangeAtSixteen) {
  const nlohmann::json amx = explain_json(model_->dir, {"--target", "cpu:amx", "--max-rows", "64"});
  int int_layers = 0;
  for (const nlohmann::json& row : amx["layers"]) {
    if (row["scheme"].get<std::string>().rfind("dense", 0) == 0) continue;
    ++int_layers;
    bool decode_seen = false;
    bool prefill_seen = false;
    for (const nlohmann::json& sel : row["selections"]) {
      const int64_t m_min = sel["m_min"].get<int64_t>();
      const std::string kernel = sel["kernel"].get<std::string>();
      if (m_min < 16) {
        decode_seen = true;
        EXPECT_LE(sel["m_max"].get<int64_t>(), 15) << row.dump();
        EXPECT_EQ(kernel.find(".amx"), std::string::npos) << row.dump();
        bool listed = false;
        for (const nlohmann::json& rej : sel["rejected"]) {
          if (rej["kernel"].get<std::string>().find(".amx") == std::string::npos) continue;
          if (rej["kernel"].get<std::string>().find("w4a16") == std::string::npos) continue;
          listed = true;
          EXPECT_EQ(rej["reason"].get<std::string>().rfind("m-range", 0), 0u) << rej.dump();
        }
        EXPECT_TRUE(listed) << row.dump();
      } else {
        prefill_seen = true;
        EXPECT_EQ(kernel, "cpu.w4a16.amx") << row.dump();
      }
    }
    EXPECT_TRUE(decode_seen && prefill_seen) << row.dump();
    for (const nlohmann::json& bucket : row["buckets"]) {
      const bool amx_bucket = bucket["kernel"] == "cpu.w4a16.amx";
      EXPECT_EQ(amx_bucket, bucket["m_min"].get<int64_t>() >= 16) << bucket.dump();
      if (amx_bucket) {
        EXPECT_EQ(bucket["engine"], "amx") << bucket.dump();
      }
    }
  }
  EXPECT_GT(int_layers, 0);

  const nlohmann::json avx512 =
      explain_json(model_->dir, {"--target", "cpu:avx512", "--max-rows", "64"});
  for (const nlohmann::json& row : avx512["layers"]) {
    if (row["scheme"].get<std::string>().rfind("dense", 0) == 0) continue;
    for (const nlohmann::json& sel : row["selections"]) {
      EXPECT_EQ(sel["kernel"].get<std::string>().find(".amx"), std::string::npos) << row.dump();
      bool listed = false;
      for (const nlohmann::json& rej : sel["rejected"]) {
        if (rej["kernel"] != "cpu.w4a16.amx") continue;
        listed = true;
        EXPECT_EQ(rej["reason"].get<std::string>().rfind("missing-isa", 0), 0u) << rej.dump();
        EXPECT_NE(rej["reason"].get<std::string>().find("amx"), std::string::npos) << rej.dump();
      }
      EXPECT_TRUE(listed) << row.dump();
    }
  }
}

// A qlinear built with the backend (a developer's CUDA or OpenCL build) answers with the device or
// the runtime's own error instead: those parts are then not this test's business.
TEST_F(ExplainLayerErrors, DeviceNotCompiled) {
  const RunResult layer = run_layer({"--device", "cuda"}, good_input());
  if (layer.err.find("not compiled") != std::string::npos) {
    expect_error(layer, {"cuda", "not compiled"});
    expect_error(run_cli({"explain", "--model", model_->dir, "--device", "cuda"}),
                 {"cuda", "not compiled", "--target cuda:sm90"});
  }
  const RunResult xpu = run_cli({"explain", "--model", model_->dir, "--device", "xpu"});
  if (xpu.err.find("not compiled") != std::string::npos) {
    expect_error(xpu, {"OpenCL", "not compiled", "--target xpu"});
  } else if (xpu.exit_code != 0) {
    // An OpenCL build without an Intel GPU (PoCL's CPU device, or no platform) still suggests it.
    expect_error(xpu, {"--target xpu"});
  }
}

TEST_F(ExplainLayerErrors, LayerRefusesSimulatedTarget) {
  expect_error(run_layer({"--target", "cpu:avx2"}, good_input()),
               {"--target cpu:avx2", "simulated"});
}

TEST_F(ExplainLayerErrors, UnknownTargetListsAcceptedOnes) {
  expect_error(run_cli({"explain", "--model", model_->dir, "--target", "tpu:v5"}),
               {"tpu:v5", "cuda:smNN", "xpu"});
}

TEST_F(ExplainLayerErrors, ExplainTextHasTableAndReasons) {
  const RunResult r = run_cli({"explain", "--model", model_->dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LAYER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KERNEL"), std::string::npos);
  const nlohmann::json report = explain_json(model_->dir, {});
  for (const nlohmann::json& row : report["layers"]) {
    // One table line per layer: its name, then (further along the line) its kernel.
    const std::string name = row["name"];
    const size_t at = r.out.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(row["kernel"].get<std::string>()), std::string::npos) << line;
    for (const nlohmann::json& rej : row["rejected"]) {
      EXPECT_NE(r.out.find(rej["reason"].get<std::string>()), std::string::npos) << rej["reason"];
    }
  }
}

}  // namespace
}  // namespace qlinear
