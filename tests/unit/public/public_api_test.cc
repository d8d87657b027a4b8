// The public API (include/qlinear/) on the project's fixtures: Model opens every format, explains
// it, loads a layer that runs like the reference kernel, concurrent runs of one Linear with their
// own workspaces give the bits of a single run, the log sink sees the dispatch lines, and the
// version macros match the library.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/fixtures.h"
#include "qlinear/qlinear.h"

namespace qlinear {
namespace {

std::string fixture(FixtureFormat format) {
  const std::string dir =
      std::string(QLINEAR_TEST_TMPDIR) + "/" + std::string(fixture_format_name(format));
  auto written = write_fixture(format, dir);
  EXPECT_TRUE(written.ok()) << written.status().to_string();
  return dir;
}

const Device& cpu() {
  static const Device device = [] {
    Result<Device> d = detect_device("cpu");
    return d.ok() ? *d : Device{};
  }();
  return device;
}

// x [M, K] -> y [M, N] through `layer` on the CPU, with its own workspace.
std::vector<float> run(const Linear& layer, const std::vector<float>& x, int64_t M) {
  std::vector<float> y(static_cast<std::size_t>(M * layer.N()), NAN);
  std::vector<std::byte> storage(layer.workspace_bytes(M) + 64);
  void* base = storage.data();
  std::size_t space = storage.size();
  void* aligned = std::align(64, layer.workspace_bytes(M), base, space);
  ExecContext ctx;
  ctx.workspace = {aligned, layer.workspace_bytes(M), Location::host()};
  const Status s = layer.run(ConstMatrixView::dense(x.data(), DType::kF32, M, layer.K()),
                             MatrixView::dense(y.data(), DType::kF32, M, layer.N()), ctx);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return y;
}

std::vector<float> inputs(int64_t M, int64_t K) {
  std::vector<float> x(static_cast<std::size_t>(M * K));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i));
  return x;
}

double relative_error(const std::vector<float>& y, const std::vector<float>& ref) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diff += (static_cast<double>(y[i]) - ref[i]) * (static_cast<double>(y[i]) - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

TEST(PublicApi, VersionMacrosMatchTheLibrary) {
  const Version v = version();
  EXPECT_EQ(v.major, QLINEAR_VERSION_MAJOR);
  EXPECT_EQ(v.minor, QLINEAR_VERSION_MINOR);
  EXPECT_EQ(v.patch, QLINEAR_VERSION_PATCH);
  EXPECT_EQ(std::string(version_string()), std::to_string(v.major) + "." + std::to_string(v.minor) +
                                               "." + std::to_string(v.patch));
}

TEST(PublicApi, EveryFixtureOpensExplainsAndRunsLikeTheReference) {
  for (FixtureFormat format :
       {FixtureFormat::kAwq, FixtureFormat::kGptqActOrder, FixtureFormat::kCtW8A16AsymChannel,
        FixtureFormat::kCtFp8Dynamic, FixtureFormat::kFp8Block, FixtureFormat::kUnquantized}) {
    SCOPED_TRACE(std::string(fixture_format_name(format)));
    auto model = Model::open(fixture(format));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    ASSERT_FALSE(model->linear_layers().empty());
    auto policy = make_policy("auto", "", "");
    ASSERT_TRUE(policy.ok());
    auto report = model->explain(cpu(), *policy);
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    EXPECT_EQ(report->layers.size(), model->linear_layers().size());
    for (const ExplainRow& row : report->layers) {
      EXPECT_FALSE(row.kernel.empty()) << row.name << ": " << row.error;
      ASSERT_FALSE(row.buckets.empty());
      EXPECT_EQ(row.buckets.front().m_min, 1);
      EXPECT_EQ(row.buckets.back().m_max, 4096);
    }
    LinearOptions options;
    options.policy = *policy;
    options.act_dtype = DType::kF32;
    options.max_rows = 5;
    const std::string& name = model->linear_layers().front().name;
    auto layer = model->load_linear(name, cpu(), options);
    ASSERT_TRUE(layer.ok()) << layer.status().to_string();
    options.policy.backend = LinearBackend::kReference;
    auto oracle = model->load_linear(name, cpu(), options);
    ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
    const std::vector<float> x = inputs(5, layer->K());
    EXPECT_LE(relative_error(run(*layer, x, 5), run(*oracle, x, 5)), 1e-5);
  }
}

TEST(PublicApi, UnknownLayerNamesAndBadRanksAreErrors) {
  auto model = Model::open(fixture(FixtureFormat::kAwq));
  ASSERT_TRUE(model.ok());
  LinearOptions options;
  EXPECT_EQ(model->load_linear("model.layers.9.mlp.up_proj", cpu(), options).status().code(),
            ErrorCode::kNotFound);
  options.tp = 2;
  EXPECT_EQ(model->load_linear("lm_head", cpu(), options, 2).status().code(),
            ErrorCode::kInvalidArgument);
  const Result<Device> simulated = simulate_target("cuda:sm90");
  ASSERT_TRUE(simulated.ok());
  EXPECT_FALSE(model->load_linear("lm_head", *simulated, LinearOptions{}).ok());
}

// LinearFusion on kernels that have none (every CPU kernel): fusion_at says so at every M, and a
// fused run is refused (kUnsupported, naming what cannot be fused) without writing anything,
// while the same call without fusion runs.
TEST(PublicApi, KernelsWithoutNormFusionSayItAndRefuseFusedRuns) {
  auto model = Model::open(fixture(FixtureFormat::kAwq));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  LinearOptions options;
  options.act_dtype = DType::kF32;
  options.max_rows = 4;
  const std::string& name = model->linear_layers().front().name;
  auto layer = model->load_linear(name, cpu(), options);
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  for (int64_t m = 0; m <= 5; ++m) {
    EXPECT_FALSE(layer->fusion_at(m).add_norm) << m;
    EXPECT_FALSE(layer->fusion_at(m).rms) << m;
    EXPECT_FALSE(layer->fusion_at(m).swiglu) << m;
  }
  const int64_t M = 2;
  const int64_t N = layer->N();
  const std::vector<float> x = inputs(M, layer->K());
  std::vector<float> y(static_cast<std::size_t>(M * N), NAN);
  std::vector<float> residual(y.size(), 1.0f), pre(y.size(), 2.0f), weight(N, 1.0f);
  std::vector<double> partials(static_cast<std::size_t>(M * ((N + 15) / 16)), 3.0);
  std::vector<std::byte> ws(layer->workspace_bytes(M) + 64);
  void* base = ws.data();
  std::size_t space = ws.size();
  ExecContext ctx;
  ctx.workspace = {std::align(64, layer->workspace_bytes(M), base, space),
                   layer->workspace_bytes(M), Location::host()};
  const ConstMatrixView xv = ConstMatrixView::dense(x.data(), DType::kF32, M, layer->K());
  const MatrixView yv = MatrixView::dense(y.data(), DType::kF32, M, N);
  LinearFusion add;
  add.add_norm = AddNormEpilogue{MatrixView::dense(residual.data(), DType::kF32, M, N),
                                 ConstMatrixView::dense(weight.data(), DType::kF32, 1, N),
                                 MatrixView::dense(pre.data(), DType::kF32, M, N),
                                 MatrixView::dense(partials.data(), DType::kF64, M, (N + 15) / 16)};
  Status s = layer->run(xv, yv, ctx, add);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("cannot fuse the residual add"), std::string::npos) << s.message();
  LinearFusion rms;
  rms.rms = RmsPrologue{ConstMatrixView::dense(partials.data(), DType::kF64, M, 1), N, 1e-6f};
  s = layer->run(xv, yv, ctx, rms);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("cannot fuse the RMS scaling"), std::string::npos) << s.message();
  std::vector<float> gated(static_cast<std::size_t>(M * (N / 2)), 4.0f);
  LinearFusion swiglu;
  swiglu.swiglu = SwiGluEpilogue{MatrixView::dense(gated.data(), DType::kF32, M, N / 2)};
  s = layer->run(xv, yv, ctx, swiglu);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("cannot fuse the SiLU-gated product"), std::string::npos)
      << s.message();
  // Two epilogues in one run is the caller's mistake, whatever the kernel.
  LinearFusion both = swiglu;
  both.add_norm = add.add_norm;
  s = layer->run(xv, yv, ctx, both);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_EQ(gated[0], 4.0f);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(residual[0], 1.0f);
  EXPECT_EQ(pre[0], 2.0f);
  EXPECT_TRUE(layer->run(xv, yv, ctx, LinearFusion{}).ok());
  EXPECT_FALSE(std::isnan(y[0]));
}

// LinearOptions::swiglu_halves is a layout hint: a kernel that cannot use it (every CPU kernel)
// prepares and runs the layer exactly as without it, and its problem string says it was asked.
TEST(PublicApi, TheSwiGluHintChangesNoResult) {
  auto model = Model::open(fixture(FixtureFormat::kGptqAsym4));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  std::string name;
  for (const auto& l : model->linear_layers()) {
    if (l.name.find("gate_up_proj") != std::string::npos || name.empty()) name = l.name;
  }
  LinearOptions options;
  options.act_dtype = DType::kF32;
  options.max_rows = 3;
  auto plain = model->load_linear(name, cpu(), options);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  options.swiglu_halves = true;
  auto hinted = model->load_linear(name, cpu(), options);
  ASSERT_TRUE(hinted.ok()) << hinted.status().to_string();
  EXPECT_EQ(hinted->buckets().front().kernel, plain->buckets().front().kernel);
  const bool even = plain->N() % 2 == 0;
  EXPECT_EQ(hinted->buckets().front().problem.find(":swiglu") != std::string::npos, even)
      << hinted->buckets().front().problem;
  EXPECT_EQ(plain->buckets().front().problem.find(":swiglu"), std::string::npos);
  const std::vector<float> x = inputs(3, plain->K());
  EXPECT_EQ(run(*hinted, x, 3), run(*plain, x, 3));
}

// The thread-safety rule of qlinear/linear.h: one Linear, several threads, one workspace each.
TEST(PublicApi, ConcurrentRunsWithTheirOwnWorkspacesGiveTheBitsOfOneRun) {
  auto model = Model::open(fixture(FixtureFormat::kGptqActOrder));
  ASSERT_TRUE(model.ok());
  LinearOptions options;
  options.act_dtype = DType::kF32;
  options.max_rows = 9;
  auto layer = model->load_linear(model->linear_layers().front().name, cpu(), options);
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  const std::vector<float> x = inputs(9, layer->K());
  const std::vector<float> alone = run(*layer, x, 9);
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&, out = &result] {
      for (int i = 0; i < 10; ++i) *out = run(*layer, x, 9);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& result : results) EXPECT_EQ(result, alone);
}

TEST(PublicApi, TheLogSinkReceivesDispatchLines) {
  std::mutex mutex;
  std::vector<std::string> lines;
  set_log_sink([&](LogLevel level, std::string_view topic, std::string_view message) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (level == LogLevel::kVerbose && topic == "dispatch") lines.emplace_back(message);
  });
  ::setenv("QLINEAR_VERBOSE", "dispatch", 1);
  auto model = Model::open(fixture(FixtureFormat::kAwq));
  ASSERT_TRUE(model.ok());
  auto layer = model->load_linear("lm_head", cpu(), LinearOptions{});
  ::unsetenv("QLINEAR_VERBOSE");
  set_log_sink(nullptr);
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  ASSERT_FALSE(lines.empty());
  bool chosen = false;
  for (const std::string& line : lines) {
    chosen = chosen || line.find("accepted (chosen)") != std::string::npos;
  }
  EXPECT_TRUE(chosen) << lines.front();
}

}  // namespace
}  // namespace qlinear
