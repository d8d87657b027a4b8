// The CUDA kernels on a real GPU: every CUDA kernel of the registry (kernels added later are
// covered without touching this file) against the CPU reference kernel of its scheme, over a grid
// of seeded random canonical weights (int 2/4/8 with every group kind, zero points and act-order;
// FP8 tensor / channel / block scales in W8A16 and every W8A8 activation mode; dense f32 / bf16 /
// f16) and M values that meet every M bucket of the kernels (the m16-tile variants, the 64-row
// blocks, cuBLASLt's buckets), every activation and output dtype, and views with padded and
// unaligned leading dimensions. Outputs are poisoned with NaN before each run, so an unwritten
// element fails; the workspace is exactly workspace_bytes(M). Also: the FP8 activation quantizer
// bit for bit against the host contract, graph capture of every capturable kernel, and the
// cuBLASLt block-scale layout probe.
//
// Without a GPU (CI) every test skips. QLINEAR_DEVICE_GRID=reduced runs an eighth of the grid
// (what tests/device/run.sh gives compute-sanitizer).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/tensor.h"
#include "cuda_test_gpu.h"
#include "kernels/common/activation_quant.h"
#include "kernels/cuda/fp8_device.h"
#include "kernels/device_context.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "qlinear/dtype.h"
#include "support/int_layer.h"

namespace qlinear {
namespace {

using test::gpu;

const Device& cpu() {
  static const Device device = [] {
    Result<Device> d = detect_device("cpu");
    return d.ok() ? *d : Device{};
  }();
  return device;
}

bool reduced() {
  const char* v = std::getenv("QLINEAR_DEVICE_GRID");
  return v != nullptr && std::string(v) == "reduced";
}

std::vector<float> random_floats(std::mt19937& rng, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

std::vector<float> maybe_bias(std::mt19937& rng, int64_t N) {
  if (rng() % 2 == 0) return {};
  return random_floats(rng, static_cast<std::size_t>(N), -1.0f, 1.0f);
}

Canonical make_int(std::mt19937& rng, int bits, int64_t K, int64_t N, int group, bool asym,
                   bool act_order, bool f32_scales) {
  Canonical c;
  c.weights = test::random_int_weights(rng, bits, K, N, group, asym, act_order, f32_scales);
  std::get<IntWeights>(c.weights).bias = maybe_bias(rng, N);
  c.shard_sizes = {N};
  return c;
}

Canonical make_fp8(std::mt19937& rng, Fp8WeightGranularity gran, int64_t K, int64_t N, int bn,
                   int bk, ActQuant act) {
  Fp8Weights w;
  w.K = K;
  w.N = N;
  w.granularity = gran;
  w.qweight.resize(static_cast<std::size_t>(N * K));
  for (uint8_t& q : w.qweight) {
    do {
      q = static_cast<uint8_t>(rng());
    } while ((q & 0x7F) == 0x7F);
  }
  if (gran == Fp8WeightGranularity::kBlock) {
    w.block_n = bn;
    w.block_k = bk;
    const int64_t blocks = ((N + bn - 1) / bn) * ((K + bk - 1) / bk);
    w.scale = random_floats(rng, static_cast<std::size_t>(blocks), 1e-4f, 1e-3f);
  } else if (gran == Fp8WeightGranularity::kTensor) {
    const float s0 = random_floats(rng, 1, 1e-4f, 1e-3f)[0];
    const float s1 = random_floats(rng, 1, 1e-4f, 1e-3f)[0];
    const bool one_shard = rng() % 2 == 0;  // one scale for all rows, or two fused shards
    for (int64_t n = 0; n < N; ++n) w.scale.push_back(one_shard || n < N / 2 ? s0 : s1);
  } else {
    w.scale = random_floats(rng, static_cast<std::size_t>(N), 1e-4f, 1e-3f);
  }
  w.activation = act;
  if (act == ActQuant::kStaticTensor) w.input_scale = 1.2f / 448.0f;
  w.bias = maybe_bias(rng, N);
  Canonical c;
  c.weights = std::move(w);
  c.shard_sizes = {N};
  return c;
}

Canonical make_dense(std::mt19937& rng, DType dtype, int64_t K, int64_t N) {
  DenseWeights w;
  w.K = K;
  w.N = N;
  w.dtype = dtype;
  const std::vector<float> v = random_floats(rng, static_cast<std::size_t>(N * K), -0.1f, 0.1f);
  w.data.resize(v.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(w.data.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      std::memcpy(w.data.data() + 2 * i, &b, 2);
    }
  }
  w.bias = maybe_bias(rng, N);
  Canonical c;
  c.weights = std::move(w);
  c.shard_sizes = {N};
  return c;
}

struct WeightCase {
  std::string label;
  Canonical weights;
  Fp8Mode mode = Fp8Mode::kNone;
};

std::vector<WeightCase> weight_cases() {
  std::vector<WeightCase> cases;
  std::mt19937 rng(20261201);
  const std::pair<int64_t, int64_t> shapes[] = {{256, 200}, {512, 384}, {1024, 136}};
  for (const auto& [K, N] : shapes) {
    for (int bits : {4, 8}) {
      for (int group : {32, 64, 128, static_cast<int>(K)}) {
        for (bool asym : {false, true}) {
          for (bool act_order : {false, true}) {
            if (act_order && group == K) continue;
            const bool f32_scales = (cases.size() % 3) == 2;
            WeightCase c;
            c.label =
                fmt::format("int{} g{} {}{}{} K={} N={}", bits, group, asym ? "asym" : "sym",
                            act_order ? " act-order" : "", f32_scales ? " f32-scales" : "", K, N);
            c.weights = make_int(rng, bits, K, N, group, asym, act_order, f32_scales);
            cases.push_back(std::move(c));
          }
        }
      }
    }
  }
  // K = 320: five 64-row steps, so a 4-bit slice (stages of two steps) ends on half a stage.
  for (int bits : {4, 8}) {
    for (int group : {64, 320}) {
      for (bool asym : {false, true}) {
        WeightCase c;
        c.label = fmt::format("int{} g{} {} K=320 N=72", bits, group, asym ? "asym" : "sym");
        c.weights = make_int(rng, bits, 320, 72, group, asym, false, false);
        cases.push_back(std::move(c));
      }
    }
  }
  // Only the blas path takes these: 2 bits, group 16, K not a multiple of 32.
  {
    WeightCase c;
    c.label = "int2 g64 asym K=256 N=72";
    c.weights = make_int(rng, 2, 256, 72, 64, true, false, false);
    cases.push_back(std::move(c));
    c.label = "int4 g16 sym K=144 N=40";
    c.weights = make_int(rng, 4, 144, 40, 16, false, false, false);
    cases.push_back(std::move(c));
    c.label = "int8 g40 asym K=120 N=24";
    c.weights = make_int(rng, 8, 120, 24, 40, true, false, false);
    cases.push_back(std::move(c));
  }
  struct Fp8Shape {
    Fp8WeightGranularity g;
    int64_t K, N;
    int bn, bk;
  };
  const Fp8Shape fp8_shapes[] = {
      {Fp8WeightGranularity::kChannel, 256, 192, 0, 0},
      {Fp8WeightGranularity::kChannel, 512, 136, 0, 0},
      {Fp8WeightGranularity::kTensor, 384, 256, 0, 0},
      {Fp8WeightGranularity::kBlock, 512, 384, 128, 128},
      {Fp8WeightGranularity::kBlock, 384, 200, 128, 128},  // ragged in N
      {Fp8WeightGranularity::kBlock, 256, 96, 16, 32},     // small blocks
      {Fp8WeightGranularity::kChannel, 100, 48, 0, 0},     // K % 32 != 0: blas only
  };
  const std::pair<Fp8Mode, ActQuant> modes[] = {
      {Fp8Mode::kW8A16, ActQuant::kNone},         {Fp8Mode::kW8A8, ActQuant::kDynamicToken},
      {Fp8Mode::kW8A8, ActQuant::kDynamicTensor}, {Fp8Mode::kW8A8, ActQuant::kStaticTensor},
      {Fp8Mode::kW8A8, ActQuant::kDynamicGroup},  {Fp8Mode::kW8A8, ActQuant::kNone},
  };
  for (const Fp8Shape& s : fp8_shapes) {
    for (const auto& [mode, act] : modes) {
      WeightCase c;
      const std::string gran = s.g == Fp8WeightGranularity::kBlock
                                   ? fmt::format("block{}x{}", s.bn, s.bk)
                                   : std::string(fp8_weight_granularity_name(s.g));
      c.label = fmt::format("fp8 {} {} act={} K={} N={}", gran, fp8_mode_name(mode),
                            act_quant_name(act), s.K, s.N);
      c.weights = make_fp8(rng, s.g, s.K, s.N, s.bn, s.bk, act);
      c.mode = mode;
      cases.push_back(std::move(c));
    }
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const auto& [K, N] : shapes) {
      WeightCase c;
      c.label = fmt::format("dense {} K={} N={}", dtype_name(dtype), K, N);
      c.weights = make_dense(rng, dtype, K, N);
      cases.push_back(std::move(c));
    }
  }
  for (WeightCase& c : cases) c.weights.name = c.label;
  return cases;
}

// Every M from 1 to 4 (the decode batch sizes the gemv kernel's register and ring forms see).
constexpr int64_t kMs[] = {1, 2, 3, 4, 8, 16, 17, 32, 33, 64, 65, 130, 300};
constexpr DType kActs[] = {DType::kBF16, DType::kF16, DType::kF32};
constexpr DType kOuts[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kBF16};

struct RunCase {
  std::size_t weight;
  int64_t M;
  DType act;
  DType out;
  int x_pad;  // extra elements per x row: 0, 8 (aligned), 3 (unaligned)
  int y_pad;
  std::string label;
};

struct Grid {
  std::vector<WeightCase> weights = weight_cases();
  std::vector<RunCase> runs;
  std::map<std::size_t, std::vector<float>> reference;  // per run

  Grid() {
    const int stride = reduced() ? 8 : 1;
    for (std::size_t i = 0; i < weights.size(); i += stride) {
      const int per_case = reduced() ? 1 : 3;
      for (int j = 0; j < per_case; ++j) {
        const std::size_t r = runs.size();
        RunCase run;
        run.weight = i;
        run.M = kMs[(i * 3 + j * 4) % std::size(kMs)];
        run.act = kActs[(i + j) % 3];
        run.out = kOuts[(i + 2 * j) % 4];
        run.x_pad = r % 5 == 1 ? 8 : (r % 5 == 3 ? 3 : 0);
        run.y_pad = r % 4 == 2 ? 5 : 0;
        run.label = fmt::format("{} M={} x={} y={} ldx+{} ldy+{}", weights[i].label, run.M,
                                dtype_name(run.act), dtype_name(run.out), run.x_pad, run.y_pad);
        runs.push_back(run);
      }
    }
  }

  LinearProblem problem(const RunCase& run) const {
    LinearProblem p = LinearProblem::from_canonical(weights[run.weight].weights);
    p.fp8_mode = weights[run.weight].mode;
    p.act_dtype = run.act;
    p.out_dtype = run.out;
    p.m_min = p.m_max = run.M;  // kernels that serve only some M meet the M they serve
    return p;
  }

  // x [M, K] uniform in [-2, 2] in the activation dtype (row 2 zero when M > 3), dense host data.
  std::vector<std::byte> input(std::size_t r) const {
    const RunCase& run = runs[r];
    const int64_t K = weights[run.weight].weights.K();
    std::mt19937 rng(static_cast<uint32_t>(5000 + r));
    std::vector<float> v = random_floats(rng, static_cast<std::size_t>(run.M * K), -2.0f, 2.0f);
    if (run.M > 3) std::fill(v.begin() + 2 * K, v.begin() + 3 * K, 0.0f);
    std::vector<std::byte> x(v.size() * dtype_size(run.act));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (run.act == DType::kF32) {
        std::memcpy(x.data() + 4 * i, &v[i], 4);
      } else {
        const uint16_t b = run.act == DType::kBF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
        std::memcpy(x.data() + 2 * i, &b, 2);
      }
    }
    return x;
  }

  // The CPU reference kernel's y as floats.
  const std::vector<float>* reference_output(std::size_t r) {
    auto it = reference.find(r);
    if (it != reference.end()) return &it->second;
    const RunCase& run = runs[r];
    const LinearProblem p = problem(run);
    const Canonical& w = weights[run.weight].weights;
    for (const LinearKernel* kernel : reference_kernels()) {
      if (!kernel->check(p, cpu()).ok()) continue;
      Result<DeviceContext*> ctx = device_context(cpu());
      if (!ctx.ok()) return nullptr;
      auto prepared = kernel->prepare(w, p, **ctx);
      if (!prepared.ok()) {
        ADD_FAILURE() << "reference prepare: " << prepared.status().to_string();
        return nullptr;
      }
      const std::vector<std::byte> x = input(r);
      Result<Tensor> y = Tensor::allocate(run.out, {run.M, p.N});
      if (!y.ok()) return nullptr;
      std::size_t ws_bytes = (*prepared)->workspace_bytes(run.M);
      Result<Tensor> ws = Tensor::allocate(DType::kU8, {static_cast<int64_t>(ws_bytes) + 1});
      ExecContext ctx_run;
      ctx_run.workspace = {ws->data(), ws_bytes, Location::host()};
      const ConstMatrixView xv(x.data(), run.act, run.M, p.K, p.K);
      const Status s = (*prepared)->run(xv, y->matrix(), ctx_run);
      if (!s.ok()) {
        ADD_FAILURE() << "reference run: " << s.to_string();
        return nullptr;
      }
      std::vector<float> out(static_cast<std::size_t>(run.M * p.N));
      convert_to_f32(y->data(), run.out, out.size(), out.data());
      return &reference.emplace(r, std::move(out)).first->second;
    }
    ADD_FAILURE() << "no reference kernel accepts " << p.to_string();
    return nullptr;
  }
};

Grid& grid() {
  static Grid g;
  return g;
}

double relative_frobenius(const std::vector<float>& y, const std::vector<float>& ref) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double d = static_cast<double>(y[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  if (!std::isfinite(diff)) return INFINITY;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// f32 activations and outputs through f32 arithmetic: 1e-5; W8A8 on FP8 tensor cores (Hopper's
// FP8 MMA accumulates in reduced precision between cuBLASLt's f32 promotions): 1e-3; any 16-bit
// activation, weight or output: 1e-2.
double tolerance(const LinearProblem& p) {
  const bool wide = p.act_dtype == DType::kF32 && p.out_dtype == DType::kF32 &&
                    (p.scheme != WeightScheme::kDense || p.weight_dtype == DType::kF32);
  if (!wide) return 1e-2;
  if (p.scheme == WeightScheme::kFp8 && p.fp8_mode == Fp8Mode::kW8A8) return 1e-3;
  return 1e-5;
}

struct DeviceRun {
  Tensor x, y, ws;
  ConstMatrixView xv;
  MatrixView yv;
  std::size_t ws_bytes = 0;
};

// Device buffers of run r for `prepared`: x uploaded with its padded ld, y poisoned with NaN.
Result<DeviceRun> device_buffers(Grid& g, std::size_t r, const PreparedLinear& prepared) {
  const RunCase& run = g.runs[r];
  const LinearProblem& p = prepared.problem();
  DeviceContext& dev = *gpu()->context;
  DeviceRun d;
  const int64_t ldx = p.K + run.x_pad;
  const int64_t ldy = p.N + run.y_pad;
  const std::size_t xe = dtype_size(run.act);
  const std::size_t ye = dtype_size(run.out);
  QL_ASSIGN_OR_RETURN(
      d.x,
      Tensor::allocate(DType::kU8, {run.M * ldx * static_cast<int64_t>(xe) + 16}, dev.allocator()));
  QL_ASSIGN_OR_RETURN(
      d.y,
      Tensor::allocate(DType::kU8, {run.M * ldy * static_cast<int64_t>(ye) + 16}, dev.allocator()));
  const std::vector<std::byte> x = g.input(r);
  std::vector<std::byte> padded(static_cast<std::size_t>(run.M * ldx) * xe, std::byte{0x55});
  for (int64_t m = 0; m < run.M; ++m) {
    std::memcpy(padded.data() + m * ldx * xe, x.data() + m * p.K * xe, p.K * xe);
  }
  QL_RETURN_IF_ERROR(dev.upload(d.x.data(), 0, padded.data(), padded.size()));
  const std::size_t y_bytes = (static_cast<std::size_t>(run.M * ldy) * ye + 3) / 4 * 4;
  QL_RETURN_IF_ERROR(dev.fill(d.y.data(), 0, 0x7FC07FC0u, y_bytes));  // NaN in every dtype
  d.ws_bytes = prepared.workspace_bytes(run.M);
  QL_ASSIGN_OR_RETURN(
      d.ws, Tensor::allocate(DType::kU8, {static_cast<int64_t>(d.ws_bytes) + 1}, dev.allocator()));
  d.xv = ConstMatrixView(d.x.data(), run.act, run.M, p.K, ldx, dev.location());
  d.yv = MatrixView(d.y.data(), run.out, run.M, p.N, ldy, dev.location());
  return d;
}

Result<std::vector<float>> download(const DeviceRun& d, const RunCase& run, int64_t N) {
  const std::size_t ye = dtype_size(run.out);
  std::vector<std::byte> raw(static_cast<std::size_t>(run.M * d.yv.ld()) * ye);
  QL_RETURN_IF_ERROR(gpu()->context->download(raw.data(), d.y.data(), 0, raw.size()));
  std::vector<float> out(static_cast<std::size_t>(run.M * N));
  for (int64_t m = 0; m < run.M; ++m) {
    convert_to_f32(raw.data() + m * d.yv.ld() * ye, run.out, N, out.data() + m * N);
  }
  return out;
}

std::vector<const LinearKernel*> cuda_registry() {
  std::vector<const LinearKernel*> out;
  for (const LinearKernel* k : all_kernels()) {
    if (k->platform() == Platform::kCuda) out.push_back(k);
  }
  return out;
}

class CudaGrid : public testing::TestWithParam<std::string> {};

TEST_P(CudaGrid, MatchesReference) {
  REQUIRE_GPU();
  const LinearKernel* kernel = find_kernel(GetParam());
  ASSERT_NE(kernel, nullptr);
  Grid& g = grid();
  std::map<std::string, int> rejected;
  std::map<std::string, std::string> example;
  int accepted = 0;
  double worst = 0.0;
  std::string worst_case;
  for (std::size_t r = 0; r < g.runs.size(); ++r) {
    const RunCase& run = g.runs[r];
    SCOPED_TRACE(fmt::format("{} on {}", kernel->name(), run.label));
    const LinearProblem p = g.problem(run);
    const Verdict verdict = kernel->check(p, gpu()->device);
    if (!verdict.ok()) {
      const std::string code(reason_code(verdict.reason));
      if (rejected[code]++ == 0) example[code] = fmt::format("{}: {}", run.label, verdict.detail);
      continue;
    }
    ++accepted;
    auto prepared = kernel->prepare(g.weights[run.weight].weights, p, *gpu()->context);
    if (!prepared.ok()) {
      ADD_FAILURE() << "accepted but failed to prepare: " << prepared.status().to_string()
                    << "\n  reproducer: " << p.to_string();
      continue;
    }
    Result<DeviceRun> d = device_buffers(g, r, **prepared);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    ExecContext ctx;
    ctx.workspace = {d->ws.data(), d->ws_bytes, gpu()->context->location()};
    const Status s = (*prepared)->run(d->xv, d->yv, ctx);
    if (!s.ok()) {
      ADD_FAILURE() << "run failed: " << s.to_string() << "\n  reproducer: " << p.to_string();
      continue;
    }
    const Status sync = gpu()->context->synchronize();
    ASSERT_TRUE(sync.ok()) << sync.to_string();
    Result<std::vector<float>> y = download(*d, run, p.N);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    const std::vector<float>* ref = g.reference_output(r);
    if (ref == nullptr) continue;
    const double error = relative_frobenius(*y, *ref);
    if (error > worst) {
      worst = error;
      worst_case = run.label;
    }
    EXPECT_LE(error, tolerance(p))
        << "relative Frobenius error vs the reference; reproducer: " << p.to_string()
        << " M=" << run.M;
  }
  std::cout << fmt::format("[ cuda grid ] {}: {} of {} cases accepted, worst error {:.3g} ({})",
                           kernel->name(), accepted, g.runs.size(), worst, worst_case)
            << "\n";
  for (const auto& [code, count] : rejected) {
    std::cout << fmt::format("[ cuda grid ]   rejected {} x {} (e.g. {})", count, code,
                             example[code])
              << "\n";
  }
  // A planned entry (no device code yet) answers not-compiled to every case.
  if (accepted == 0 && rejected.size() == 1 && rejected.begin()->first == "not-compiled") {
    GTEST_SKIP() << kernel->name() << ": " << example.begin()->second;
  }
  if (!reduced()) {
    EXPECT_GT(accepted, 0) << kernel->name() << " accepts none of the grid's cases";
  }
}

// A capturable kernel's run, captured into a CUDA graph and replayed, writes what a direct run
// writes, bit for bit.
TEST_P(CudaGrid, GraphCaptureReplaysTheRun) {
  REQUIRE_GPU();
  const LinearKernel* kernel = find_kernel(GetParam());
  ASSERT_NE(kernel, nullptr);
  Grid& g = grid();
  int captured = 0;
  for (std::size_t r = 0; r < g.runs.size() && captured < 3; ++r) {
    const RunCase& run = g.runs[r];
    const LinearProblem p = g.problem(run);
    if (!kernel->check(p, gpu()->device).ok()) continue;
    auto prepared = kernel->prepare(g.weights[run.weight].weights, p, *gpu()->context);
    ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
    if (!(*prepared)->capturable()) GTEST_SKIP() << kernel->name() << " is not capturable";
    Result<DeviceRun> d = device_buffers(g, r, **prepared);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ExecContext ctx;
    ctx.stream = stream;
    ctx.workspace = {d->ws.data(), d->ws_bytes, gpu()->context->location()};
    ASSERT_TRUE((*prepared)->run(d->xv, d->yv, ctx).ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    Result<std::vector<float>> direct = download(*d, run, p.N);
    ASSERT_TRUE(direct.ok());
    const std::size_t y_bytes =
        (static_cast<std::size_t>(run.M * d->yv.ld()) * dtype_size(run.out) + 3) / 4 * 4;
    ASSERT_TRUE(gpu()->context->fill(d->y.data(), 0, 0x7FC07FC0u, y_bytes).ok());
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const Status s = (*prepared)->run(d->xv, d->yv, ctx);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_TRUE(s.ok()) << s.to_string();
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    Result<std::vector<float>> replay = download(*d, run, p.N);
    ASSERT_TRUE(replay.ok());
    EXPECT_EQ(std::memcmp(direct->data(), replay->data(), direct->size() * 4), 0)
        << "graph replay differs from the direct run: " << run.label;
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    (void)cudaStreamDestroy(stream);
    ++captured;
  }
  if (captured == 0) GTEST_SKIP() << kernel->name() << " accepts no grid case";
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const LinearKernel* k : cuda_registry()) out.emplace_back(k->name());
  return out;
}

std::string test_name(const testing::TestParamInfo<std::string>& param) {
  std::string n = param.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Registry, CudaGrid, testing::ValuesIn(names()), test_name);

// The device quantizer against quantize_activations_into, bit for bit, for every kind and dtype.
TEST(CudaFp8Quantizer, BitIdenticalToTheContract) {
  REQUIRE_GPU();
  DeviceContext& dev = *gpu()->context;
  std::mt19937 rng(99);
  const ActQuant kinds[] = {ActQuant::kDynamicToken, ActQuant::kDynamicGroup,
                            ActQuant::kDynamicTensor, ActQuant::kStaticTensor};
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (ActQuant kind : kinds) {
      for (auto [M, K] : {std::pair<int64_t, int64_t>{1, 256}, {7, 200}, {33, 1000}}) {
        SCOPED_TRACE(fmt::format("{} {} M={} K={}", dtype_name(dtype), act_quant_name(kind), M, K));
        std::vector<float> xf = random_floats(rng, static_cast<std::size_t>(M * K), -3.0f, 3.0f);
        if (M > 3) std::fill(xf.begin() + 2 * K, xf.begin() + 3 * K, 0.0f);  // the scale floor
        xf[K / 2] = 1e-6f;                                                   // tiny values
        if (M > 1) xf[K + 3] = 900.0f;                                       // saturation
        std::vector<std::byte> raw(xf.size() * dtype_size(dtype));
        for (std::size_t i = 0; i < xf.size(); ++i) {
          if (dtype == DType::kF32) {
            std::memcpy(raw.data() + 4 * i, &xf[i], 4);
          } else {
            const uint16_t b = dtype == DType::kBF16 ? f32_to_bf16(xf[i]) : f32_to_f16(xf[i]);
            std::memcpy(raw.data() + 2 * i, &b, 2);
          }
        }
        std::vector<float> exact(xf.size());
        convert_to_f32(raw.data(), dtype, exact.size(), exact.data());
        const int64_t group_k = 128;
        const float static_scale = 2.5f / 448.0f;
        const int64_t n_scales = std::max<int64_t>(activation_scale_count(kind, M, K, group_k), 1);
        std::vector<uint8_t> codes(static_cast<std::size_t>(M * K));
        std::vector<float> sc(static_cast<std::size_t>(n_scales));
        ASSERT_TRUE(quantize_activations_into(exact.data(), M, K, kind, static_scale, group_k,
                                              codes.data(), sc.data())
                        .ok());
        auto dx = Tensor::allocate(DType::kU8, {static_cast<int64_t>(raw.size())}, dev.allocator());
        auto dc = Tensor::allocate(DType::kU8, {M * K}, dev.allocator());
        auto ds = Tensor::allocate(DType::kF32, {std::max<int64_t>(n_scales, M)}, dev.allocator());
        auto dscratch = Tensor::allocate(DType::kF32, {M}, dev.allocator());
        ASSERT_TRUE(dx.ok() && dc.ok() && ds.ok() && dscratch.ok());
        ASSERT_TRUE(dev.upload(dx->data(), 0, raw.data(), raw.size()).ok());
        const Status s = cuda_fp8::quantize(dx->data(), K, dtype, M, K, kind, static_scale, group_k,
                                            /*group_major=*/false, /*replicate=*/false,
                                            dc->data_as<uint8_t>(), ds->data_as<float>(),
                                            dscratch->data_as<float>(), dev.default_stream());
        ASSERT_TRUE(s.ok()) << s.to_string();
        ASSERT_TRUE(dev.synchronize().ok());
        std::vector<uint8_t> got_codes(codes.size());
        std::vector<float> got_scales(sc.size());
        ASSERT_TRUE(dev.download(got_codes.data(), dc->data(), 0, got_codes.size()).ok());
        ASSERT_TRUE(dev.download(got_scales.data(), ds->data(), 0, got_scales.size() * 4).ok());
        EXPECT_EQ(std::memcmp(got_scales.data(), sc.data(), sc.size() * 4), 0);
        int64_t mismatches = 0;
        for (std::size_t i = 0; i < codes.size(); ++i) mismatches += got_codes[i] != codes[i];
        EXPECT_EQ(mismatches, 0) << "codes differ from quantize_activations_into";
      }
    }
  }
}

// Which forms of block-scaled FP8 cuBLASLt takes on this GPU, and in which scale layouts
// (diagnostic: cuda.fp8.cublaslt.sm89 does not take block weights yet, see its kBlockScalingWired).
TEST(CudaFp8BlockLayout, ProbeReportsCublasLtForms) {
  REQUIRE_GPU();
  if (gpu()->device.sm < 90) GTEST_SKIP() << "block scaling needs sm90";
  Result<std::string> layout = cuda_fp8::probe_block_scale_layout(*gpu()->context);
  std::cout << "[ cuda grid ] cuBLASLt block-scaled FP8 probe:\n"
            << (layout.ok() ? *layout : layout.status().to_string()) << "\n";
}

}  // namespace
}  // namespace qlinear
