// The native dense CPU kernels (cpu.dense.avx512, cpu.dense.avx2) against a scalar double dot
// product written here: every M around the engine switches, ragged N, odd K, bf16/f16 weights,
// f32/bf16/f16 activations and outputs, bias, strided views, thread counts, check() and the
// selection order. Kernels this CPU cannot run are skipped (missing-isa).
//
// Error bound per element, from the arithmetic: the kernels widen 16-bit weights and bf16/f16
// activations to f32 exactly and accumulate in f32, so |y - y_exact| <= (K + 8) u S with
// u = 2^-24 and S = sum_k |x_k w_k| + |bias| (at most K + 8 roundings along any sum: the
// chains, their reduction and the bias). cpu.dense.avx512 splits f32 activations into bf16
// hi + lo (f16 ones split exactly, bf16 ones are used as they are): |x - hi - lo| <= 2^-16 |x|,
// and the lo products double the roundings, so there (2K + 8) u S + 2^-16 S. A bf16 or
// f16 output adds its rounding of the f32 result (2^-8 or 2^-11 relative, f16 subnormals 2^-25
// absolute). Shapes keep K <= ~1100 so that one wrong or missing product (~S / K on average) is
// far above the bound: DenseNativeTest.BoundCatchesOneWrongWeight checks exactly that.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "kernels/select.h"
#include "qlinear/device.h"
#include "qlinear/dtype.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

const std::vector<std::string>& native_kernels() {
  static const std::vector<std::string> names = {"cpu.dense.avx512", "cpu.dense.avx2"};
  return names;
}

struct Layer {
  int64_t K = 0;
  int64_t N = 0;
  std::vector<double> w;  // [N, K]: the exact values of the 16-bit weights
  std::vector<double> bias;
  Canonical canonical;
};

uint16_t to_16(float v, DType dtype) {
  return dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
}
float from_16(uint16_t v, DType dtype) {
  return dtype == DType::kBF16 ? bf16_to_f32(v) : f16_to_f32(v);
}

// Weights ~ N(0, 1/16) rounded to `dtype`; a few exact zeros and sign flips come with it.
Layer make_layer(DType dtype, int64_t K, int64_t N, bool bias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.25f);
  Layer l;
  l.K = K;
  l.N = N;
  DenseWeights w;
  w.K = K;
  w.N = N;
  w.dtype = dtype;
  w.data.resize(static_cast<std::size_t>(N * K) * 2);
  l.w.resize(static_cast<std::size_t>(N * K));
  for (int64_t i = 0; i < N * K; ++i) {
    const uint16_t bits = to_16(dist(rng), dtype);
    std::memcpy(w.data.data() + 2 * i, &bits, 2);
    l.w[i] = from_16(bits, dtype);
  }
  if (bias) {
    for (int64_t n = 0; n < N; ++n) {
      w.bias.push_back(0.125f * static_cast<float>(n % 9) - 0.5f);
      l.bias.push_back(w.bias.back());
    }
  }
  l.canonical.name = "test.dense";
  l.canonical.weights = std::move(w);
  l.canonical.shard_sizes = {N};
  return l;
}

// x [M, K] in `dtype`, rows `ld` elements apart (the gap holds NaN: a kernel that reads it
// fails), and the exact values.
struct Activations {
  Tensor storage;
  ConstMatrixView view;
  std::vector<double> values;  // [M, K]
};

Activations make_x(int64_t M, int64_t K, int64_t ld, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Activations a;
  a.storage = test::host_tensor(dtype, {M, ld});
  a.values.resize(static_cast<std::size_t>(M * K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < ld; ++k) {
      const int64_t i = m * ld + k;
      const float v = k < K ? dist(rng) : NAN;
      if (dtype == DType::kF32) {
        a.storage.data_as<float>()[i] = v;
        if (k < K) a.values[m * K + k] = v;
      } else {
        const uint16_t bits = to_16(v, dtype);
        a.storage.data_as<uint16_t>()[i] = bits;
        if (k < K) a.values[m * K + k] = from_16(bits, dtype);
      }
    }
  }
  a.view = ConstMatrixView(a.storage.data(), dtype, M, K, ld);
  return a;
}

struct Expected {
  std::vector<double> y;     // [M, N]
  std::vector<double> mass;  // [M, N]: sum_k |x w| + |bias|
};

Expected reference(const Layer& l, const std::vector<double>& x, int64_t M) {
  Expected e{std::vector<double>(static_cast<std::size_t>(M * l.N)),
             std::vector<double>(static_cast<std::size_t>(M * l.N))};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < l.N; ++n) {
      double sum = l.bias.empty() ? 0.0 : l.bias[n];
      double mass = std::abs(sum);  // the bias is one more term of the rounded sum
      for (int64_t k = 0; k < l.K; ++k) {
        const double p = x[m * l.K + k] * l.w[n * l.K + k];
        sum += p;
        mass += std::abs(p);
      }
      e.y[m * l.N + n] = sum;
      e.mass[m * l.N + n] = mass;
    }
  }
  return e;
}

double allowed_error(const std::string& kernel, DType weights, int64_t K, DType act, DType out,
                     double mass, double expected) {
  const bool split = kernel == "cpu.dense.avx512" && weights == DType::kBF16 && act != DType::kBF16;
  double err = static_cast<double>((split ? 2 : 1) * K + 8) * std::ldexp(1.0, -24) * mass;
  if (split && act == DType::kF32) err += std::ldexp(1.0, -16) * mass;
  const double size = std::abs(expected) + err;
  if (out == DType::kBF16) err += std::ldexp(1.0, -8) * size;
  if (out == DType::kF16) err += std::ldexp(1.0, -11) * size + std::ldexp(1.0, -25);
  return err;
}

Device host() {
  Result<Device> device = detect_device("cpu");
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  return device.ok() ? device.value() : Device{};
}

struct RunSpec {
  DType act = DType::kF32;
  DType out = DType::kF32;
  int64_t x_ld = 0;  // 0: K
  int64_t y_ld = 0;  // 0: N (else y is a column slice of a wider matrix; the rest must stay)
  int threads = 0;
};

// Runs `name` on layer l for M rows; returns y as floats [M, N] (empty when skipped or failed).
// `mismatches` counts elements outside the bound against `e` (ADD_FAILURE for the first 5
// unless `quiet`).
std::vector<float> run_and_compare(const std::string& name, const Layer& l, int64_t M,
                                   const RunSpec& run, int* mismatches = nullptr,
                                   const Expected* given = nullptr, bool quiet = false) {
  const DenseWeights& dw = std::get<DenseWeights>(l.canonical.weights);
  SCOPED_TRACE(::testing::Message()
               << name << " w=" << dtype_name(dw.dtype) << " K=" << l.K << " N=" << l.N
               << " M=" << M << " x=" << dtype_name(run.act) << " y=" << dtype_name(run.out)
               << " bias=" << !l.bias.empty() << " x_ld=" << run.x_ld << " y_ld=" << run.y_ld
               << " threads=" << run.threads);
  const LinearKernel* kernel = find_kernel(name);
  EXPECT_NE(kernel, nullptr);
  if (kernel == nullptr) return {};
  LinearProblem problem = LinearProblem::from_canonical(l.canonical);
  problem.act_dtype = run.act;
  problem.out_dtype = run.out;
  problem.m_min = 1;
  problem.m_max = std::max<int64_t>(M, 1);
  const Verdict verdict = kernel->check(problem, host());
  if (verdict.reason == Reason::kMissingIsa) return {};
  EXPECT_TRUE(verdict.ok()) << verdict.to_string();
  if (!verdict.ok()) return {};
  auto prepared = test::prepare_on_cpu(*kernel, l.canonical, problem);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return {};

  const int64_t x_ld = run.x_ld > 0 ? run.x_ld : l.K;
  const int64_t y_ld = run.y_ld > 0 ? run.y_ld : l.N;
  const Activations x = make_x(M, l.K, x_ld, run.act, static_cast<uint32_t>(M * 131 + l.K));
  // y lives at column offset `skip` of a [M, y_ld] matrix poisoned with a marker.
  const int64_t skip = (y_ld - l.N) / 2;
  Tensor storage = test::host_tensor(run.out, {M, y_ld});
  const std::size_t elem = dtype_size(run.out);
  std::vector<std::byte> marker(elem, std::byte{0x5A});
  for (int64_t i = 0; i < M * y_ld; ++i) {
    std::memcpy(static_cast<std::byte*>(storage.data()) + i * elem, marker.data(), elem);
  }
  MatrixView y(static_cast<std::byte*>(storage.data()) + skip * static_cast<int64_t>(elem), run.out,
               M, l.N, y_ld);
  Tensor workspace =
      test::host_tensor(DType::kU8, {static_cast<int64_t>((*prepared)->workspace_bytes(M)) + 1});
  ExecContext ctx;
  ctx.threads = run.threads;
  ctx.workspace = {workspace.data(), (*prepared)->workspace_bytes(M), Location::host()};
  const Status status = (*prepared)->run(x.view, y, ctx);
  EXPECT_TRUE(status.ok()) << status.to_string();
  if (!status.ok()) return {};

  const Expected e = given != nullptr ? *given : reference(l, x.values, M);
  std::vector<float> out(static_cast<std::size_t>(M * l.N));
  int bad = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < y_ld; ++c) {
      const std::byte* at = static_cast<const std::byte*>(storage.data()) + (m * y_ld + c) * elem;
      if (c < skip || c >= skip + l.N) {
        if (std::memcmp(at, marker.data(), elem) != 0) {
          ++bad;
          if (!quiet) ADD_FAILURE() << "wrote outside the view at row " << m << " column " << c;
        }
        continue;
      }
      const int64_t n = c - skip;
      float got = 0.0f;
      convert_to_f32(at, run.out, 1, &got);
      out[m * l.N + n] = got;
      const double want = e.y[m * l.N + n];
      const double allowed =
          allowed_error(name, dw.dtype, l.K, run.act, run.out, e.mass[m * l.N + n], want);
      if (!(std::abs(got - want) <= allowed)) {
        if (++bad <= 5 && !quiet) {
          ADD_FAILURE() << "y[" << m << ", " << n << "] = " << got << ", expected " << want
                        << " (allowed error " << allowed << ")";
        }
      }
    }
  }
  if (mismatches != nullptr) *mismatches = bad;
  return out;
}

// The M values where a kernel's engine changes on this problem (first M of each engine but the
// first), from its own engines() list.
std::vector<int64_t> switch_points(const std::string& name, const Layer& l) {
  const LinearKernel* kernel = find_kernel(name);
  if (kernel == nullptr) return {};
  LinearProblem problem = LinearProblem::from_canonical(l.canonical);
  problem.act_dtype = DType::kF32;
  problem.m_min = 1;
  problem.m_max = 4096;
  std::vector<int64_t> points;
  const std::vector<Engine> engines = kernel->engines(problem);
  for (std::size_t i = 1; i < engines.size(); ++i) points.push_back(engines[i].m_min);
  return points;
}

constexpr DType kWeightDtypes[] = {DType::kBF16, DType::kF16};
constexpr DType kIoDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

TEST(DenseNativeTest, EveryMAroundTheEngineSwitches) {
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      const Layer l = make_layer(wd, 300, 40, true, 11);
      std::vector<int64_t> ms = {1, 2, 3, 4, 5, 6, 7, 9, 13, 64, 128, 131};
      for (int64_t s : switch_points(name, l)) {
        for (int64_t d : {-2, -1, 0, 1, 2}) {
          if (s + d >= 1) ms.push_back(s + d);
        }
      }
      std::sort(ms.begin(), ms.end());
      ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
      for (int64_t M : ms) run_and_compare(name, l, M, {});
    }
  }
}

TEST(DenseNativeTest, RaggedNAndOddK) {
  // N around the 16-column panels and 64-column groups; K odd, one, and odd multiples (the
  // 256-k chunks of the gemm engine end inside a pair only when K is odd).
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      for (int64_t N : {1, 15, 16, 17, 63, 65, 100}) {
        for (int64_t K : {1, 7, 96, 255, 257, 769}) {
          const Layer l = make_layer(wd, K, N, N % 2 == 1, static_cast<uint32_t>(K * 7 + N));
          for (int64_t M : {1, 3, 20}) run_and_compare(name, l, M, {DType::kF32});
        }
      }
    }
  }
}

TEST(DenseNativeTest, EveryDtypeCombination) {
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      const Layer l = make_layer(wd, 200, 48, true, 5);
      for (DType act : kIoDtypes) {
        for (DType out : kIoDtypes) {
          for (int64_t M : {1, 2, 5, 30}) run_and_compare(name, l, M, {act, out});
        }
      }
    }
  }
}

TEST(DenseNativeTest, StridedViewsAndBias) {
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      for (bool bias : {false, true}) {
        const Layer l = make_layer(wd, 129, 70, bias, 9);
        for (int64_t M : {1, 4, 25}) {
          for (DType io : kIoDtypes) {
            RunSpec run{io, io};
            run.x_ld = 129 + 13;
            run.y_ld = 70 + 9;
            run_and_compare(name, l, M, run);
          }
        }
      }
    }
  }
}

TEST(DenseNativeTest, LongKAndManyRowsPerJob) {
  // Several 256-k chunks, and M large enough for jobs of many row blocks (and their split when a
  // layer has few columns).
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      const Layer l = make_layer(wd, 1100, 24, true, 3);
      for (int64_t M : {1, 2, 200, 389}) run_and_compare(name, l, M, {DType::kBF16});
    }
  }
}

TEST(DenseNativeTest, ThreadCountsGiveIdenticalResults) {
  // Each output's sum runs in one fixed order whatever the team size, so results are bitwise
  // equal (3 threads asks for more than a 2-core machine grants: the budget clamps it).
  for (const std::string& name : native_kernels()) {
    for (DType wd : kWeightDtypes) {
      const Layer l = make_layer(wd, 320, 200, true, 21);
      for (int64_t M : {1, 3, 50}) {
        const std::vector<float> one =
            run_and_compare(name, l, M, {DType::kF32, DType::kF32, 0, 0, 1});
        if (one.empty()) continue;
        for (int threads : {2, 3}) {
          RunSpec run{DType::kF32, DType::kF32, 0, 0, threads};
          EXPECT_EQ(run_and_compare(name, l, M, run), one) << name << " threads=" << threads;
        }
      }
    }
  }
}

TEST(DenseNativeTest, CallsFromInsideAParallelRegionRun) {
  for (const std::string& name : native_kernels()) {
    const LinearKernel* kernel = find_kernel(name);
    ASSERT_NE(kernel, nullptr);
    const Layer l = make_layer(DType::kBF16, 64, 40, false, 2);
    LinearProblem problem = LinearProblem::from_canonical(l.canonical);
    problem.act_dtype = DType::kF32;
    problem.m_max = 16;
    if (kernel->check(problem, host()).reason == Reason::kMissingIsa) continue;
    auto prepared = test::prepare_on_cpu(*kernel, l.canonical, problem);
    ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
    const Activations x = make_x(16, 64, 64, DType::kF32, 1);
    const Expected e = reference(l, x.values, 16);
    std::vector<Tensor> outputs;
    std::vector<Tensor> workspaces;  // one per caller (qlinear/linear.h)
    for (int i = 0; i < 2; ++i) {
      outputs.push_back(test::host_tensor(DType::kF32, {16, 40}));
      workspaces.push_back(
          test::host_tensor(DType::kU8, {static_cast<int64_t>((*prepared)->workspace_bytes(16))}));
    }
    int failed = 0;
#pragma omp parallel for num_threads(2) reduction(+ : failed)
    for (int i = 0; i < 2; ++i) {
      ExecContext ctx;
      ctx.workspace = {workspaces[i].data(), workspaces[i].nbytes(), Location::host()};
      const int64_t M = i == 0 ? 1 : 16;  // one call per engine
      if (!(*prepared)
               ->run(x.view.slice_rows(0, M), outputs[i].matrix().slice_rows(0, M), ctx)
               .ok()) {
        ++failed;
      }
    }
    EXPECT_EQ(failed, 0);
    for (int i = 0; i < 2; ++i) {
      const int64_t M = i == 0 ? 1 : 16;
      for (int64_t j = 0; j < M * 40; ++j) {
        EXPECT_NEAR(outputs[i].data_as<float>()[j], e.y[j], 1e-4 * (1.0 + e.mass[j])) << j;
      }
    }
  }
}

TEST(DenseNativeTest, BoundCatchesOneWrongWeight) {
  // The comparison above must be able to fail: against the reference of a layer with one weight
  // off by half a typical |w|, exactly the outputs of that column fail, for every engine.
  for (const std::string& name : native_kernels()) {
    const Layer l = make_layer(DType::kBF16, 1100, 20, false, 17);
    Layer wrong = l;
    wrong.w[7 * l.K + 555] += 0.125;
    for (int64_t M : {1, 40}) {
      const Activations x = make_x(M, l.K, l.K, DType::kF32, static_cast<uint32_t>(M * 131 + l.K));
      const Expected e = reference(wrong, x.values, M);
      int mismatches = 0;
      const std::vector<float> y =
          run_and_compare(name, l, M, {DType::kF32}, &mismatches, &e, /*quiet=*/true);
      if (y.empty()) continue;  // missing ISA
      // The wrong weight shifts output (m, 7) by 0.125 |x[m, 555]|, above the bound (S ~ 200
      // here: ~0.014, ~0.03 for the avx512 hi + lo split) wherever |x[m, 555]| > 0.3.
      int expected_misses = 0;
      for (int64_t m = 0; m < M; ++m) {
        expected_misses += std::abs(x.values[m * l.K + 555]) > 0.3 ? 1 : 0;
      }
      EXPECT_GE(mismatches, expected_misses) << name << " M=" << M;
      if (M > 1) {
        EXPECT_GT(expected_misses, M / 2);
      }
      EXPECT_LE(mismatches, M) << name << " M=" << M;  // only column 7 can be off
    }
  }
}

TEST(DenseNativeTest, CheckRejectsWithCatalogueReasons) {
  const Layer l = make_layer(DType::kBF16, 64, 16, false, 1);
  const LinearProblem bf16 = LinearProblem::from_canonical(l.canonical);
  LinearProblem f16 = bf16;
  f16.weight_dtype = DType::kF16;
  LinearProblem f32 = bf16;
  f32.weight_dtype = DType::kF32;
  LinearProblem int4 = bf16;
  int4.scheme = WeightScheme::kInt;
  int4.bits = 4;
  int4.group_size = 64;
  Result<Device> avx2 = simulate_target("cpu:avx2");
  Result<Device> avx512 = simulate_target("cpu:avx512");
  Result<Device> generic = simulate_target("cpu:generic");
  Result<Device> sm90 = simulate_target("cuda:sm90");
  ASSERT_TRUE(avx2.ok() && avx512.ok() && generic.ok() && sm90.ok());
  Device avx512_no_bf16 = *avx512;
  avx512_no_bf16.cpu.avx512_bf16 = false;
  const LinearKernel* k512 = find_kernel("cpu.dense.avx512");
  const LinearKernel* k2 = find_kernel("cpu.dense.avx2");
  ASSERT_TRUE(k512 != nullptr && k2 != nullptr);

  EXPECT_TRUE(k2->check(bf16, *avx2).ok());
  EXPECT_TRUE(k2->check(f16, *avx2).ok());
  EXPECT_TRUE(k512->check(bf16, *avx512).ok());
  EXPECT_TRUE(k512->check(f16, *avx512).ok());
  // f16 weights need only AVX-512F (vcvtph2ps); bf16 weights need avx512_bf16 (vdpbf16ps).
  EXPECT_TRUE(k512->check(f16, avx512_no_bf16).ok());
  Verdict v = k512->check(bf16, avx512_no_bf16);
  EXPECT_EQ(v.reason, Reason::kMissingIsa);
  EXPECT_NE(v.detail.find("avx512_bf16"), std::string::npos) << v.detail;
  v = k512->check(bf16, *avx2);
  EXPECT_EQ(v.reason, Reason::kMissingIsa);
  EXPECT_NE(v.detail.find("avx512f"), std::string::npos) << v.detail;
  v = k2->check(bf16, *generic);
  EXPECT_EQ(v.reason, Reason::kMissingIsa);
  EXPECT_NE(v.detail.find("avx2"), std::string::npos) << v.detail;
  for (const LinearKernel* k : {k512, k2}) {
    v = k->check(f32, *avx512);
    EXPECT_EQ(v.reason, Reason::kDtype) << k->name();
    EXPECT_NE(v.detail.find("f32"), std::string::npos) << v.detail;
    EXPECT_EQ(k->check(int4, *avx512).reason, Reason::kScheme) << k->name();
    EXPECT_EQ(k->check(bf16, *sm90).reason, Reason::kWrongPlatform) << k->name();
  }
}

TEST(DenseNativeTest, SelectionPrefersTheWidestIsaAndLeavesF32WeightsToBlas) {
  const Layer l = make_layer(DType::kBF16, 64, 16, false, 1);
  LinearProblem bf16 = LinearProblem::from_canonical(l.canonical);
  LinearProblem f16 = bf16;
  f16.weight_dtype = DType::kF16;
  LinearProblem f32 = bf16;
  f32.weight_dtype = DType::kF32;
  auto policy = make_policy("auto", "", "");
  ASSERT_TRUE(policy.ok());
  const auto chosen = [&](const LinearProblem& p, const char* target) {
    Result<Device> device = simulate_target(target);
    EXPECT_TRUE(device.ok());
    auto s = select_kernel(p, *device, *policy, "lm_head");
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::string(s->kernel->name()) : std::string();
  };
  EXPECT_EQ(chosen(bf16, "cpu:avx512"), "cpu.dense.avx512");
  EXPECT_EQ(chosen(f16, "cpu:avx512"), "cpu.dense.avx512");
  EXPECT_EQ(chosen(bf16, "cpu:avx2"), "cpu.dense.avx2");
  EXPECT_EQ(chosen(f16, "cpu:avx2"), "cpu.dense.avx2");
  EXPECT_EQ(chosen(bf16, "cpu:generic"), "cpu.dense.blas.sgemm");
  EXPECT_EQ(chosen(f32, "cpu:avx512"), "cpu.dense.blas.sgemm");
}

TEST(DenseNativeTest, EnginesCoverTheRangeAndNameEachAlgorithm) {
  for (const std::string& name : native_kernels()) {
    const LinearKernel* kernel = find_kernel(name);
    ASSERT_NE(kernel, nullptr);
    for (DType wd : kWeightDtypes) {
      const Layer l = make_layer(wd, 64, 16, false, 1);
      LinearProblem p = LinearProblem::from_canonical(l.canonical);
      p.m_min = 1;
      p.m_max = 4096;
      const std::vector<Engine> engines = kernel->engines(p);
      ASSERT_FALSE(engines.empty()) << name;
      EXPECT_EQ(engines.front().m_min, 1);
      EXPECT_EQ(engines.back().m_max, 4096);
      for (std::size_t i = 0; i < engines.size(); ++i) {
        EXPECT_FALSE(engines[i].name.empty()) << name;
        if (i > 0) {
          EXPECT_EQ(engines[i].m_min, engines[i - 1].m_max + 1) << name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace qlinear
