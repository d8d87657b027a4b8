// Every registered kernel (all_kernels(): kernels added later are covered without touching this
// file) against the reference kernel of its scheme, over a grid of shapes and schemes built here
// from seeded random codes (independent of convert/). A kernel that rejects a case is skipped and
// counted (not compiled, wrong platform, unsupported group, ...); an accepted case must prepare,
// run on this machine's CPU and match within the scheme's tolerance (relative Frobenius error).
// The reference kernels themselves are compared with a straightforward oracle written here.
//
// M sweep: every weight case runs with two batch sizes M rotating through kMs, plus M just below
// and at every engine switch point of every kernel that accepts the case (LinearKernel::engines,
// e.g. the inline -> panel switch of the CPU int kernels), so each kernel meets each of its
// algorithms and the rows right around each switch. Activation and output dtypes rotate, so over
// consecutive cases every M meets every activation dtype and f32, bf16 and f16 outputs. A failing
// case prints its problem string: `qlinear bench --problem <it>` reproduces it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
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
#include "kernels/common/activation_quant.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "qlinear/dtype.h"
#include "support/int_layer.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

constexpr int64_t kMs[] = {1, 2, 7, 16, 33, 128};
constexpr int64_t kMaxGridM = 300;
constexpr DType kActDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr DType kOutDtypes[] = {DType::kF32, DType::kF32, DType::kBF16, DType::kF16};

struct WeightCase {
  std::string label;
  Canonical weights;
  Fp8Mode mode = Fp8Mode::kNone;
  bool int8_activations = false;  // int weights run with --int8-activations
  std::vector<double> dense;      // oracle W [N, K] in double, filled on first use
};

struct RunCase {
  std::size_t weight = 0;
  int64_t M = 0;
  DType act = DType::kF32;
  DType out = DType::kF32;
  std::string label;
};

std::vector<float> random_floats(std::mt19937& rng, std::size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

std::vector<float> maybe_bias(std::mt19937& rng, int64_t N) {
  if (rng() % 2 == 0) return {};
  return random_floats(rng, static_cast<std::size_t>(N), -1.0f, 1.0f);
}

Canonical make_int(std::mt19937& rng, int bits, int64_t K, int64_t N, int group, bool asym,
                   bool act_order) {
  Canonical c;
  c.weights = test::random_int_weights(rng, bits, K, N, group, asym, act_order);
  std::get<IntWeights>(c.weights).bias = maybe_bias(rng, N);
  c.shard_sizes = {N};
  return c;
}

Canonical make_fp8(std::mt19937& rng, Fp8WeightGranularity granularity, int64_t K, int64_t N,
                   int block_n, int block_k, ActQuant act) {
  Fp8Weights w;
  w.K = K;
  w.N = N;
  w.granularity = granularity;
  w.qweight.resize(static_cast<std::size_t>(N * K));
  for (uint8_t& q : w.qweight) {
    do {
      q = static_cast<uint8_t>(rng());
    } while ((q & 0x7F) == 0x7F);  // no NaN codes
  }
  if (granularity == Fp8WeightGranularity::kBlock) {
    w.block_n = block_n;
    w.block_k = block_k;
    const int64_t blocks = ((N + block_n - 1) / block_n) * ((K + block_k - 1) / block_k);
    w.scale = random_floats(rng, static_cast<std::size_t>(blocks), 1e-4f, 1e-3f);
  } else if (granularity == Fp8WeightGranularity::kTensor) {
    // A fused layer of two shards with one per-tensor scale each, expanded per row.
    const float s0 = random_floats(rng, 1, 1e-4f, 1e-3f)[0];
    const float s1 = random_floats(rng, 1, 1e-4f, 1e-3f)[0];
    for (int64_t n = 0; n < N; ++n) w.scale.push_back(n < N / 2 ? s0 : s1);
  } else {
    w.scale = random_floats(rng, static_cast<std::size_t>(N), 1e-4f, 1e-3f);
  }
  w.activation = act;
  if (act == ActQuant::kStaticTensor) w.input_scale = 1.2f / 448.0f;  // |x| > 1.2 saturates
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
  const std::vector<float> values =
      random_floats(rng, static_cast<std::size_t>(N * K), -0.1f, 0.1f);
  w.data.resize(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(w.data.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
      std::memcpy(w.data.data() + 2 * i, &b, 2);
    }
  }
  w.bias = maybe_bias(rng, N);
  Canonical c;
  c.weights = std::move(w);
  c.shard_sizes = {N};
  return c;
}

std::vector<WeightCase> build_weight_cases() {
  std::vector<WeightCase> cases;
  std::mt19937 rng(20261129);
  const std::pair<int64_t, int64_t> shapes[] = {{64, 24}, {96, 40}, {256, 128}};
  for (const auto& [K, N] : shapes) {
    for (int bits : {2, 4, 8}) {
      std::vector<int> groups;  // 32, 64, 128 where they divide K, and channelwise (K)
      for (int group : {32, 64, 128}) {
        if (group < K && K % group == 0) groups.push_back(group);
      }
      groups.push_back(static_cast<int>(K));
      for (int group : groups) {
        for (bool asym : {false, true}) {
          for (bool act_order : {false, true}) {
            if (act_order && group == K) continue;  // a one-group g_idx is not act-order
            WeightCase c;
            c.label = fmt::format("int{} g{} {}{} K={} N={}", bits, group, asym ? "asym" : "sym",
                                  act_order ? " act-order" : "", K, N);
            c.weights = make_int(rng, bits, K, N, group, asym, act_order);
            c.weights.name = c.label;
            // The same weights with int8 activations (--int8-activations).
            WeightCase a8 = c;
            a8.label += " a8";
            a8.int8_activations = true;
            cases.push_back(std::move(c));
            cases.push_back(std::move(a8));
          }
        }
      }
    }
  }
  struct Fp8Shape {
    Fp8WeightGranularity granularity;
    int64_t K, N;
    int block_n, block_k;
  };
  const Fp8Shape fp8_shapes[] = {
      {Fp8WeightGranularity::kChannel, 64, 24, 0, 0},
      {Fp8WeightGranularity::kChannel, 96, 40, 0, 0},
      {Fp8WeightGranularity::kChannel, 256, 128, 0, 0},
      {Fp8WeightGranularity::kTensor, 64, 24, 0, 0},
      {Fp8WeightGranularity::kTensor, 256, 128, 0, 0},
      {Fp8WeightGranularity::kBlock, 256, 128, 128, 128},  // aligned
      {Fp8WeightGranularity::kBlock, 96, 40, 128, 128},    // one ragged block
      {Fp8WeightGranularity::kBlock, 192, 160, 128, 128},  // ragged in K and N
      {Fp8WeightGranularity::kBlock, 64, 24, 16, 32},      // small blocks
  };
  const std::pair<Fp8Mode, ActQuant> modes[] = {
      {Fp8Mode::kW8A16, ActQuant::kNone},
      {Fp8Mode::kW8A8, ActQuant::kDynamicToken},
      {Fp8Mode::kW8A8, ActQuant::kDynamicTensor},
      {Fp8Mode::kW8A8, ActQuant::kStaticTensor},
      {Fp8Mode::kW8A8, ActQuant::kDynamicGroup},
      {Fp8Mode::kW8A8, ActQuant::kNone},  // weight-only checkpoint forced to W8A8
  };
  for (const Fp8Shape& s : fp8_shapes) {
    for (const auto& [mode, act] : modes) {
      WeightCase c;
      const std::string gran = s.granularity == Fp8WeightGranularity::kBlock
                                   ? fmt::format("block{}x{}", s.block_n, s.block_k)
                                   : std::string(fp8_weight_granularity_name(s.granularity));
      c.label = fmt::format("fp8 {} {} act={} K={} N={}", gran, fp8_mode_name(mode),
                            act_quant_name(act), s.K, s.N);
      c.weights = make_fp8(rng, s.granularity, s.K, s.N, s.block_n, s.block_k, act);
      c.weights.name = c.label;
      c.mode = mode;
      cases.push_back(std::move(c));
    }
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const auto& [K, N] : shapes) {
      WeightCase c;
      c.label = fmt::format("dense {} K={} N={}", dtype_name(dtype), K, N);
      c.weights = make_dense(rng, dtype, K, N);
      c.weights.name = c.label;
      cases.push_back(std::move(c));
    }
  }
  // N > kBlasTileN (256): several column tiles, the last one ragged.
  {
    WeightCase c;
    c.label = "int4 g32 asym act-order K=64 N=300";
    c.weights = make_int(rng, 4, 64, 300, 32, true, true);
    cases.push_back(std::move(c));
  }
  {
    WeightCase c;
    c.label = "int8 g32 asym act-order K=64 N=300 a8";
    c.weights = make_int(rng, 8, 64, 300, 32, true, true);
    c.int8_activations = true;
    cases.push_back(std::move(c));
  }
  {
    WeightCase c;
    c.label = "fp8 block128x128 w8a8 act=dynamic-group K=64 N=300";
    c.weights =
        make_fp8(rng, Fp8WeightGranularity::kBlock, 64, 300, 128, 128, ActQuant::kDynamicGroup);
    c.mode = Fp8Mode::kW8A8;
    cases.push_back(std::move(c));
  }
  {
    WeightCase c;
    c.label = "dense bf16 K=64 N=300";
    c.weights = make_dense(rng, DType::kBF16, 64, 300);
    cases.push_back(std::move(c));
  }
  for (WeightCase& c : cases) c.weights.name = c.label;
  return cases;
}

const Device& cpu() {
  static const Device device = [] {
    Result<Device> detected = detect_device("cpu");
    return detected.ok() ? *detected : Device{};  // a failure is reported by the test itself
  }();
  return device;
}

// The OpenCL device the OpenCL kernels run on, or the reason there is none.
const Result<Device>& opencl_device() {
  static const Result<Device> device = [] {
    const char* spec = std::getenv("QLINEAR_GRID_OPENCL_DEVICE");
    return detect_device(spec != nullptr && spec[0] != '\0' ? spec : "opencl");
  }();
  return device;
}

// Where a kernel's cases run: its platform's real device (CUDA kernels are checked against the
// CPU and reject as wrong-platform; tests/device runs them).
const Device& device_for(const LinearKernel& kernel) {
  if (kernel.platform() == Platform::kOpenCl && opencl_device().ok()) return *opencl_device();
  return cpu();
}

struct Grid {
  std::vector<WeightCase> weights = build_weight_cases();
  std::vector<RunCase> runs;
  std::vector<std::optional<std::vector<float>>> reference;  // per run: the reference kernel's y
  std::vector<std::optional<std::vector<float>>> oracle;     // per run: this file's oracle y
  std::map<std::size_t, Tensor> inputs;                      // per run: x in its dtype

  Grid() {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      // M pairs repeat every 6 cases and dtypes shift by one every 6, so over 18 consecutive
      // cases every M meets every activation dtype.
      const DType act = kActDtypes[(i + i / 6) % 3];
      std::vector<int64_t> ms = {kMs[i % 6], kMs[(i + 3) % 6]};
      for (int64_t m : switch_points(i, act)) {
        ms.push_back(m - 1);
        ms.push_back(m);
      }
      std::sort(ms.begin(), ms.end());
      ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
      for (std::size_t j = 0; j < ms.size(); ++j) {
        const int64_t M = ms[j];
        const DType out = kOutDtypes[(i + j) % 4];
        runs.push_back({i, M, act, out,
                        fmt::format("{} M={} x={} y={}", weights[i].label, M, dtype_name(act),
                                    dtype_name(out))});
      }
    }
    reference.resize(runs.size());
    oracle.resize(runs.size());
  }

  LinearProblem problem(std::size_t weight, DType act, DType out) const {
    LinearProblem p = LinearProblem::from_canonical(weights[weight].weights);
    p.fp8_mode = weights[weight].mode;
    p.int8_activations = weights[weight].int8_activations;
    p.act_dtype = act;
    p.out_dtype = out;
    return p;
  }
  LinearProblem problem(const RunCase& run) const {
    LinearProblem p = problem(run.weight, run.act, run.out);
    p.m_min = p.m_max = run.M;
    return p;
  }

  // The first M of every engine after the first, of every registered kernel that accepts weight
  // case i on this CPU, within 2..kMaxGridM.
  std::vector<int64_t> switch_points(std::size_t i, DType act) const {
    LinearProblem p = problem(i, act, DType::kF32);
    p.m_min = 1;
    p.m_max = kMaxGridM;
    std::vector<int64_t> points;
    for (const LinearKernel* kernel : all_kernels()) {
      if (!kernel->check(p, cpu()).ok()) continue;
      const std::vector<Engine> engines = kernel->engines(p);
      for (std::size_t e = 1; e < engines.size(); ++e) points.push_back(engines[e].m_min);
      for (int64_t m : kernel->m_breakpoints()) {
        if (m >= 2 && m <= kMaxGridM) points.push_back(m);
      }
    }
    return points;
  }

  // x [M, K] uniform in [-2, 2], rounded to the activation dtype; row 2 is zero when M > 3 (the
  // scale floor of dynamic activation quantization).
  const Tensor& input(std::size_t r) {
    auto it = inputs.find(r);
    if (it != inputs.end()) return it->second;
    const RunCase& run = runs[r];
    const int64_t K = weights[run.weight].weights.K();
    std::mt19937 rng(static_cast<uint32_t>(1000 + r));
    std::vector<float> values = random_floats(rng, static_cast<std::size_t>(run.M * K), -2, 2);
    if (run.M > 3) std::fill(values.begin() + 2 * K, values.begin() + 3 * K, 0.0f);
    Tensor x = test::host_tensor(run.act, {run.M, K});
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (run.act == DType::kF32) {
        x.data_as<float>()[i] = values[i];
      } else if (run.act == DType::kBF16) {
        x.data_as<uint16_t>()[i] = f32_to_bf16(values[i]);
      } else {
        x.data_as<uint16_t>()[i] = f32_to_f16(values[i]);
      }
    }
    return inputs.emplace(r, std::move(x)).first->second;
  }

  // y = x_eff * W^T + bias in double, W from Canonical::dequant, x_eff = x or its W8A8 (FP8) or
  // int8-activation quantize-dequantize.
  const std::vector<float>& oracle_output(std::size_t r) {
    if (oracle[r]) return *oracle[r];
    const RunCase& run = runs[r];
    WeightCase& wc = weights[run.weight];
    const int64_t K = wc.weights.K();
    const int64_t N = wc.weights.N();
    if (wc.dense.empty()) {
      wc.dense.resize(static_cast<std::size_t>(N * K));
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t k = 0; k < K; ++k) wc.dense[n * K + k] = wc.weights.dequant(n, k);
      }
    }
    const Tensor& x = input(r);
    std::vector<float> xf(static_cast<std::size_t>(x.numel()));
    convert_to_f32(x.data(), x.dtype(), xf.size(), xf.data());
    std::vector<double> xe(xf.begin(), xf.end());
    if (wc.mode == Fp8Mode::kW8A8) {
      const LinearProblem p = problem(run);
      const auto& f = std::get<Fp8Weights>(wc.weights.weights);
      auto q = quantize_activations(xf.data(), run.M, K, w8a8_act_quant(p), f.input_scale,
                                    w8a8_act_group_k(p));
      EXPECT_TRUE(q.ok()) << q.status().to_string();
      if (q.ok()) {
        for (int64_t m = 0; m < run.M; ++m) {
          for (int64_t k = 0; k < K; ++k) {
            xe[m * K + k] = static_cast<double>(f8e4m3_to_f32(q->codes[m * K + k])) *
                            static_cast<double>(q->scale(m, k));
          }
        }
      }
    }
    if (wc.int8_activations) {
      const auto& w = std::get<IntWeights>(wc.weights.weights);
      std::vector<int32_t> group_of_k(static_cast<std::size_t>(K));
      for (int64_t k = 0; k < K; ++k) group_of_k[k] = static_cast<int32_t>(w.group_of(k));
      const Int8Activations q =
          quantize_int8_activations(xf.data(), run.M, K, group_of_k, w.num_groups);
      for (int64_t m = 0; m < run.M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          xe[m * K + k] = static_cast<double>(q.codes[m * K + k]) *
                          static_cast<double>(q.scales[m * q.groups + group_of_k[k]]);
        }
      }
    }
    const std::vector<float>& bias = std::visit(
        [](const auto& w) -> const std::vector<float>& { return w.bias; }, wc.weights.weights);
    std::vector<float> y(static_cast<std::size_t>(run.M * N));
    for (int64_t m = 0; m < run.M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        double acc = bias.empty() ? 0.0 : bias[n];
        for (int64_t k = 0; k < K; ++k) acc += xe[m * K + k] * wc.dense[n * K + k];
        y[m * N + n] = static_cast<float>(acc);
      }
    }
    oracle[r] = std::move(y);
    return *oracle[r];
  }
};

Grid& grid() {
  static Grid g;  // shared by every kernel's test: each reference output is computed once
  return g;
}

// Runs `kernel` on run r on `device`; nullopt (with a test failure) if it fails.
std::optional<std::vector<float>> run_kernel(const LinearKernel& kernel, Grid& g, std::size_t r,
                                             const Device& device) {
  const RunCase& run = g.runs[r];
  const Canonical& weights = g.weights[run.weight].weights;
  const LinearProblem problem = g.problem(run);
  std::string why;
  DeviceContext* context = test::context_for(device, &why);
  if (context == nullptr) {
    ADD_FAILURE() << "no context for " << device.name << ": " << why;
    return std::nullopt;
  }
  auto prepared = kernel.prepare(weights, problem, *context);
  if (!prepared.ok()) {
    ADD_FAILURE() << kernel.name()
                  << " accepted but failed to prepare: " << prepared.status().to_string()
                  << "\n  reproducer: " << problem.to_string();
    return std::nullopt;
  }
  // The output starts as NaN (run_on_cpu): an unwritten element fails the comparison.
  Result<Tensor> y = test::run_on_device(**prepared, *context, g.input(r));
  if (!y.ok()) {
    ADD_FAILURE() << kernel.name() << " failed to run: " << y.status().to_string()
                  << "\n  reproducer: " << problem.to_string();
    return std::nullopt;
  }
  return test::as_floats(*y);
}

// The reference kernel's output for run r (the first reference kernel that accepts it).
const std::vector<float>* reference_output(Grid& g, std::size_t r) {
  if (!g.reference[r]) {
    const LinearProblem problem = g.problem(g.runs[r]);
    for (const LinearKernel* kernel : reference_kernels()) {
      if (!kernel->check(problem, cpu()).ok()) continue;
      g.reference[r] = run_kernel(*kernel, g, r, cpu());
      break;
    }
    if (!g.reference[r]) {
      ADD_FAILURE() << "no reference kernel accepts " << problem.to_string();
      return nullptr;
    }
  }
  return &*g.reference[r];
}

double relative_frobenius(const std::vector<float>& y, const std::vector<float>& ref) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double d = static_cast<double>(y[i]) - static_cast<double>(ref[i]);
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  if (!std::isfinite(diff)) return INFINITY;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// int / dense with f32 activations, weights and outputs, and FP8 against the reference of the
// same mode: 1e-5; any 16-bit activation, dense weight or output dtype: 1e-2 (a bf16 output alone
// rounds each element by up to 2^-9 relative).
double tolerance(const LinearProblem& p) {
  const bool wide = p.act_dtype == DType::kF32 && p.out_dtype == DType::kF32 &&
                    (p.scheme != WeightScheme::kDense || p.weight_dtype == DType::kF32);
  return wide ? 1e-5 : 1e-2;
}

class KernelGrid : public testing::TestWithParam<std::string> {};

TEST_P(KernelGrid, MatchesReference) {
  ASSERT_TRUE(detect_device("cpu").ok()) << detect_device("cpu").status().to_string();
  const LinearKernel* kernel = find_kernel(GetParam());
  ASSERT_NE(kernel, nullptr) << GetParam();
  if (kernel->platform() == Platform::kOpenCl && !opencl_device().ok()) {
    GTEST_SKIP() << "no OpenCL device to run " << kernel->name()
                 << " on: " << opencl_device().status().to_string();
  }
  const Device& device = device_for(*kernel);
  const bool is_reference = kernel->family() == Family::kReference;
  Grid& g = grid();
  std::map<std::string, int> rejected;         // reason code -> count
  std::map<std::string, std::string> example;  // reason code -> first "case: detail"
  int accepted = 0;
  for (std::size_t r = 0; r < g.runs.size(); ++r) {
    const RunCase& run = g.runs[r];
    SCOPED_TRACE(fmt::format("{} on {}", kernel->name(), run.label));
    const LinearProblem problem = g.problem(run);
    const Verdict verdict = kernel->check(problem, device);
    if (!verdict.ok()) {
      const std::string code(reason_code(verdict.reason));
      if (rejected[code]++ == 0) example[code] = fmt::format("{}: {}", run.label, verdict.detail);
      continue;
    }
    ++accepted;
    const std::optional<std::vector<float>> y = run_kernel(*kernel, g, r, device);
    if (!y) continue;
    const std::vector<float>* expected =
        is_reference ? &g.oracle_output(r) : reference_output(g, r);
    if (expected == nullptr) continue;
    ASSERT_EQ(y->size(), expected->size());
    const double error = relative_frobenius(*y, *expected);
    EXPECT_LE(error, tolerance(problem))
        << "relative Frobenius error vs " << (is_reference ? "the test oracle" : "the reference")
        << "; reproducer: " << problem.to_string();
  }
  // A kernel this machine can run that accepts nothing means the grid lacks its scheme or its
  // check() is wrong; kernels of other platforms, needing ISA this CPU lacks or device features
  // this OpenCL device lacks (the Intel GPU variants on PoCL), run elsewhere.
  const bool runs_elsewhere = std::any_of(rejected.begin(), rejected.end(), [](const auto& entry) {
    return entry.first == "wrong-platform" || entry.first == "missing-isa" ||
           entry.first == "not-compiled" || entry.first == "capability";
  });
  if (accepted == 0 && !runs_elsewhere) {
    ADD_FAILURE() << kernel->name() << " accepts none of the " << g.runs.size()
                  << " grid cases (add its scheme to the grid)";
  }
  std::cout << fmt::format("[ grid     ] {} on {}: {} of {} cases accepted", kernel->name(),
                           device.name, accepted, g.runs.size())
            << "\n";
  for (const auto& [code, count] : rejected) {
    std::cout << fmt::format("[ grid     ]   rejected {} x {} (e.g. {})", count, code,
                             example[code])
              << "\n";
  }
}

std::vector<std::string> registered_kernel_names() {
  std::vector<std::string> names;
  for (const LinearKernel* kernel : all_kernels()) names.emplace_back(kernel->name());
  return names;
}

// "cpu.int.blas.sgemm" -> "cpu_int_blas_sgemm" (test names allow only [A-Za-z0-9_]).
std::string test_name(const testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelGrid, testing::ValuesIn(registered_kernel_names()),
                         test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelGrid);

}  // namespace
}  // namespace qlinear
