// --int8-activations (W4A8 / W8A8 int): the one int8 activation quantizer (hand-computed codes,
// the properties its rule implies, NaN handling, group membership by column), the reference kernel
// in that mode against a bound derived from the rule, the native VNNI kernels against the
// reference bit-for-bit codes (tight tolerance at every activation dtype), and the opt-in: no
// kernel runs int8 activations unless the policy or the problem asks, and every kernel that does
// not run the asked-for mode says why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "kernels/common/activation_quant.h"
#include "kernels/cpu/int_a8_avx2.h"
#include "kernels/cpu/int_a8_tiles.h"
#include "kernels/registry.h"
#include "kernels/select.h"
#include "qlinear/dtype.h"
#include "support/gptq_pack.h"
#include "support/int_layer.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

// --- the quantizer ------------------------------------------------------------------------

TEST(Int8ActivationQuant, HandComputedCodesWhenTheScaleIsOne) {
  // absmax 127 -> s = 1 exactly, so q = RNE(x): ties go to the even neighbour.
  const std::vector<float> x = {127.0f, 2.5f, 3.5f, -2.5f, 0.49f, -127.0f, 1.5f, 0.5f};
  const Int8Activations q = quantize_int8_activations(x.data(), 1, 8, 8);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 1.0f);
  const std::vector<int8_t> expected = {127, 2, 4, -2, 0, -127, 2, 0};
  EXPECT_EQ(q.codes, expected);
}

TEST(Int8ActivationQuant, EveryCodeIsWithinHalfAStepAndTheMaximumMapsTo127) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int64_t group : {4, 32, 96}) {
    const int64_t M = 3;
    const int64_t K = 96;
    std::vector<float> x(static_cast<size_t>(M * K));
    for (float& v : x) v = dist(rng);
    const Int8Activations q = quantize_int8_activations(x.data(), M, K, group);
    ASSERT_EQ(q.groups, K / group);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t g = 0; g < K / group; ++g) {
        const float s = q.scales[m * q.groups + g];
        float absmax = 0.0f;
        int max_code = 0;
        for (int64_t k = g * group; k < (g + 1) * group; ++k) {
          absmax = std::max(absmax, std::fabs(x[m * K + k]));
          const int code = q.codes[m * K + k];
          max_code = std::max(max_code, std::abs(code));
          ASSERT_LE(std::abs(code), 127);
          EXPECT_LE(std::fabs(x[m * K + k] - static_cast<float>(code) * s), 0.5f * s * 1.0001f)
              << "m=" << m << " k=" << k;
        }
        EXPECT_EQ(s, absmax / 127.0f);
        EXPECT_EQ(max_code, 127);
      }
    }
  }
}

TEST(Int8ActivationQuant, ZeroRowsGetTheFloorScaleAndZeroCodes) {
  const std::vector<float> x(16, 0.0f);
  const Int8Activations q = quantize_int8_activations(x.data(), 2, 8, 4);
  for (float s : q.scales) EXPECT_EQ(s, kInt8ActScaleFloor);
  for (int8_t c : q.codes) EXPECT_EQ(c, 0);
}

TEST(Int8ActivationQuant, NanOrInfinityPoisonsOnlyItsGroup) {
  std::vector<float> x = {1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 4.0f, 1.0f, 2.0f,
                          3.0f, 4.0f, std::numeric_limits<float>::infinity(),  1.0f, 1.0f, 1.0f};
  const Int8Activations q = quantize_int8_activations(x.data(), 1, 12, 4);
  EXPECT_TRUE(std::isnan(q.scales[0]));
  EXPECT_EQ(q.scales[1], 4.0f / 127.0f);
  EXPECT_TRUE(std::isnan(q.scales[2]));
  for (int k : {0, 1, 2, 3, 8, 9, 10, 11}) EXPECT_EQ(q.codes[k], 0) << k;
  EXPECT_EQ(q.codes[7], 127);
}

TEST(Int8ActivationQuant, GroupsByColumnEqualContiguousGroupsOfThePermutedRow) {
  // Act-order kernels permute x so every group is contiguous; the reference groups by g_idx.
  const int64_t K = 64;
  const int64_t group = 16;
  std::mt19937 rng(11);
  std::vector<int32_t> g_idx(K);
  for (int64_t k = 0; k < K; ++k) g_idx[k] = static_cast<int32_t>(k / group);
  std::shuffle(g_idx.begin(), g_idx.end(), rng);
  std::vector<int32_t> perm(K);
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return g_idx[a] < g_idx[b]; });
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(K);
  for (float& v : x) v = dist(rng);
  std::vector<float> permuted(K);
  for (int64_t k = 0; k < K; ++k) permuted[k] = x[perm[k]];

  const Int8Activations by_column = quantize_int8_activations(x.data(), 1, K, g_idx, K / group);
  const Int8Activations contiguous = quantize_int8_activations(permuted.data(), 1, K, group);
  EXPECT_EQ(by_column.scales, contiguous.scales);
  for (int64_t k = 0; k < K; ++k) EXPECT_EQ(by_column.codes[perm[k]], contiguous.codes[k]) << k;
}

TEST(Int8ActivationQuant, TheAvx512QuantizerIsBitIdenticalToTheReference) {
  const Device& cpu = []() -> const Device& {
    static const Device device = [] {
      Result<Device> d = detect_device("cpu");
      return d.ok() ? *d : Device{};
    }();
    return device;
  }();
  if (!cpu.cpu.avx512f || !cpu.cpu.avx512bw) GTEST_SKIP() << "needs avx512f/bw";
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (int64_t group : {4, 8, 12, 32, 40, 128}) {
    const int64_t K = group * 5;
    const int64_t M = 6;
    std::vector<float> x(static_cast<size_t>(M * K));
    for (float& v : x) v = dist(rng);
    // Row 1: scale exactly 1 and every tie k + 0.5 (rounds to even); row 2: zeros; row 3: a NaN
    // and an infinity in two groups; row 4: subnormal values only.
    for (int64_t k = 0; k < K; ++k)
      x[K + k] = k % 7 == 0 ? 127.0f : static_cast<float>(k % 9) - 3.5f;
    std::fill(x.begin() + 2 * K, x.begin() + 3 * K, 0.0f);
    x[3 * K + 1] = std::numeric_limits<float>::quiet_NaN();
    x[3 * K + 2 * group] = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < K; ++k) x[4 * K + k] = 1e-40f * static_cast<float>(k % 5 - 2);
    const Int8Activations expected = quantize_int8_activations(x.data(), M, K, group);
    std::vector<int8_t> codes(static_cast<size_t>(M * K), 99);
    std::vector<float> scales(static_cast<size_t>(M * (K / group)));
    std::vector<float> qsums(scales.size());
    int_a8::quantize_rows_avx512(x.data(), 0, M, K, group, codes.data(), scales.data(),
                                 qsums.data());
    EXPECT_EQ(codes, expected.codes) << "group " << group;
    for (size_t i = 0; i < scales.size(); ++i) {
      if (std::isnan(expected.scales[i])) {
        EXPECT_TRUE(std::isnan(scales[i])) << i;
      } else {
        EXPECT_EQ(scales[i], expected.scales[i]) << "group " << group << " index " << i;
      }
      int64_t sum = 0;
      const int64_t m = static_cast<int64_t>(i) / (K / group);
      const int64_t g = static_cast<int64_t>(i) % (K / group);
      for (int64_t k = g * group; k < (g + 1) * group; ++k) sum += expected.codes[m * K + k];
      EXPECT_EQ(qsums[i], static_cast<float>(sum)) << i;
    }
  }
}

// The code of column k of row m in the AVX2 quantizer's quads (int_a8_avx2.h's byte order).
int8_t unpacked_a8_code(const std::vector<uint32_t>& quads, int64_t K, int bits, int64_t m,
                        int64_t k) {
  const auto* bytes = reinterpret_cast<const int8_t*>(quads.data()) + m * K;
  if (bits == 8) return bytes[k];
  const int64_t run = k / 8 * 8;
  const int64_t i = k % 8;  // stored at 0 2 4 6 1 3 5 7 -> position i/2 (even) or 4 + i/2 (odd)
  return bytes[run + (i % 2 == 0 ? i / 2 : 4 + i / 2)];
}

bool host_has_avx2() {
  Result<Device> d = detect_device("cpu");
  return d.ok() && d->cpu.avx2 && d->cpu.fma && d->cpu.f16c;
}

TEST(Int8ActivationQuant, TheAvx2QuantizerIsBitIdenticalToTheReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (int bits : {4, 8}) {
    for (int64_t group : {8, 16, 40, 128, 256}) {
      SCOPED_TRACE(fmt::format("bits {} group {}", bits, group));
      const int64_t K = group * 3;
      const int64_t M = 6;
      std::vector<float> x(static_cast<size_t>(M * K));
      for (float& v : x) v = dist(rng);
      // Row 1: scale exactly 1 and every tie k + 0.5 (rounds to even); row 2: zeros; row 3: a NaN
      // and an infinity in two groups; row 4: subnormal values only; row 5: one outlier.
      for (int64_t k = 0; k < K; ++k)
        x[K + k] = k % 7 == 0 ? 127.0f : static_cast<float>(k % 9) - 3.5f;
      std::fill(x.begin() + 2 * K, x.begin() + 3 * K, 0.0f);
      x[3 * K + 1] = std::numeric_limits<float>::quiet_NaN();
      x[3 * K + 2 * group + 3] = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < K; ++k) x[4 * K + k] = 1e-40f * static_cast<float>(k % 5 - 2);
      x[5 * K + group + 5] = 3e4f;
      const Int8Activations expected = quantize_int8_activations(x.data(), M, K, group);
      std::vector<uint32_t> quads(static_cast<size_t>(M * K / 4), 0x63636363u);
      std::vector<float> scales(static_cast<size_t>(M * (K / group)));
      std::vector<int32_t> qsums(scales.size(), 12345);
      int_a8::quantize_rows_a8_avx2(x.data(), M, K, group, bits, quads.data(), scales.data(),
                                    qsums.data());
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          ASSERT_EQ(unpacked_a8_code(quads, K, bits, m, k), expected.codes[m * K + k])
              << "m=" << m << " k=" << k;
        }
      }
      for (size_t i = 0; i < scales.size(); ++i) {
        if (std::isnan(expected.scales[i])) {
          EXPECT_TRUE(std::isnan(scales[i])) << i;
        } else {
          EXPECT_EQ(scales[i], expected.scales[i]) << "index " << i;
        }
        int32_t sum = 0;
        const int64_t m = static_cast<int64_t>(i) / (K / group);
        const int64_t g = static_cast<int64_t>(i) % (K / group);
        for (int64_t k = g * group; k < (g + 1) * group; ++k) sum += expected.codes[m * K + k];
        EXPECT_EQ(qsums[i], sum) << i;
      }
    }
  }
}

// --- kernels ------------------------------------------------------------------------------

using test::int_layer;

Tensor activations(DType dtype, int64_t M, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Tensor x = test::host_tensor(dtype, {M, K});
  for (int64_t i = 0; i < M * K; ++i) {
    const float v = dist(rng);
    if (dtype == DType::kF32) {
      x.data_as<float>()[i] = v;
    } else {
      x.data_as<uint16_t>()[i] = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
    }
  }
  return x;
}

const Device& host() {
  static const Device device = [] {
    Result<Device> d = detect_device("cpu");
    return d.ok() ? *d : Device{};
  }();
  return device;
}

std::vector<float> run(const LinearKernel& kernel, const Canonical& weights, bool int8,
                       const Tensor& x) {
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.int8_activations = int8;
  problem.act_dtype = x.dtype();
  problem.m_min = problem.m_max = x.shape()[0];
  const Verdict verdict = kernel.check(problem, host());
  EXPECT_TRUE(verdict.ok()) << kernel.name() << ": " << verdict.to_string();
  auto prepared = test::prepare_on_cpu(kernel, weights, problem);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return {};
  Result<Tensor> y = test::run_on_cpu(**prepared, x);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  if (!y.ok()) return {};
  return test::as_floats(*y);
}

TEST(Int8ActivationKernels, ReferenceStaysWithinTheQuantizationBoundOfFloatActivations) {
  // |y_a8 - y_a16| <= sum_k |W[n,k]| * s(m, group(k)) / 2: each activation moves at most half a
  // step, and the rest of both computations is exact up to double rounding.
  const LinearKernel* reference = find_kernel("reference.int.scalar");
  ASSERT_NE(reference, nullptr);
  const Canonical weights = int_layer(4, 128, 24, 32, true, true, 3);
  const auto& w = std::get<IntWeights>(weights.weights);
  const Tensor x = activations(DType::kF32, 3, 128, 5);
  const std::vector<float> a8 = run(*reference, weights, true, x);
  const std::vector<float> a16 = run(*reference, weights, false, x);
  std::vector<int32_t> group_of_k(128);
  for (int64_t k = 0; k < 128; ++k) group_of_k[k] = static_cast<int32_t>(w.group_of(k));
  const Int8Activations q =
      quantize_int8_activations(x.data_as<float>(), 3, 128, group_of_k, w.num_groups);
  bool any_difference = false;
  for (int64_t m = 0; m < 3; ++m) {
    for (int64_t n = 0; n < 24; ++n) {
      double bound = 0.0;
      for (int64_t k = 0; k < 128; ++k) {
        bound += std::fabs(weights.dequant(n, k)) * q.scales[m * q.groups + group_of_k[k]] / 2;
      }
      const double diff = std::fabs(static_cast<double>(a8[m * 24 + n]) - a16[m * 24 + n]);
      EXPECT_LE(diff, bound * 1.0001 + 1e-6) << "m=" << m << " n=" << n;
      any_difference = any_difference || diff > 0.0;
    }
  }
  EXPECT_TRUE(any_difference) << "int8 activations changed nothing: the mode was not applied";
}

struct NativeCase {
  const char* kernel;
  int bits;
  int group;  // 0: channelwise
  bool zeros;
  bool act_order;
  int64_t K = 256;
};

// Whether `kernel` runs M rows of `weights` in the a8 mode (a decode kernel rejects larger M).
bool runs_rows(const LinearKernel& kernel, const Canonical& weights, int64_t M) {
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.int8_activations = true;
  problem.m_min = problem.m_max = M;
  return kernel.check(problem, host()).reason != Reason::kMRange;
}

class NativeInt8Activations : public testing::TestWithParam<NativeCase> {};

TEST_P(NativeInt8Activations, MatchesTheReferenceInTheSameMode) {
  const NativeCase c = GetParam();
  const LinearKernel* kernel = find_kernel(c.kernel);
  ASSERT_NE(kernel, nullptr);
  const int64_t K = c.K;
  const int64_t N = 72;  // one full 64-column tile and a ragged one
  const Canonical weights = int_layer(c.bits, K, N, c.group == 0 ? static_cast<int>(K) : c.group,
                                      c.zeros, c.act_order, 17 + c.bits + c.group);
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.int8_activations = true;
  problem.m_max = 1;
  if (const Verdict v = kernel->check(problem, host()); !v.ok()) {
    GTEST_SKIP() << c.kernel << " does not run here: " << v.to_string();
  }
  const LinearKernel* reference = find_kernel("reference.int.scalar");
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t M : {1, 2, 3, 4, 7, 15, 100}) {
      if (!runs_rows(*kernel, weights, M)) continue;
      const Tensor x = activations(dtype, M, K, static_cast<uint32_t>(M));
      const std::vector<float> y = run(*kernel, weights, true, x);
      const std::vector<float> expected = run(*reference, weights, true, x);
      ASSERT_EQ(y.size(), expected.size());
      // Same int8 codes and scales; only the f32 (vs double) accumulation differs.
      double diff = 0.0;
      double norm = 0.0;
      for (size_t i = 0; i < y.size(); ++i) {
        diff +=
            (static_cast<double>(y[i]) - expected[i]) * (static_cast<double>(y[i]) - expected[i]);
        norm += static_cast<double>(expected[i]) * expected[i];
      }
      EXPECT_LE(std::sqrt(diff / norm), 2e-6) << dtype_name(dtype) << " M=" << M;
    }
  }
}

TEST_P(NativeInt8Activations, NanActivationsGiveNanOutputsForThatRowOnly) {
  const NativeCase c = GetParam();
  const LinearKernel* kernel = find_kernel(c.kernel);
  ASSERT_NE(kernel, nullptr);
  const Canonical weights = int_layer(c.bits, 64, 8, c.group == 0 ? 64 : 32, c.zeros, false, 1);
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.int8_activations = true;
  problem.act_dtype = DType::kF32;
  problem.m_min = problem.m_max = 3;
  if (const Verdict v = kernel->check(problem, host()); !v.ok()) {
    GTEST_SKIP() << c.kernel << " does not run here: " << v.to_string();
  }
  Tensor x = activations(DType::kF32, 3, 64, 9);
  x.data_as<float>()[64 + 5] = std::numeric_limits<float>::quiet_NaN();
  x.data_as<float>()[128 + 40] = -std::numeric_limits<float>::infinity();
  const std::vector<float> y = run(*kernel, weights, true, x);
  ASSERT_EQ(y.size(), 24u);
  for (int n = 0; n < 8; ++n) {
    EXPECT_TRUE(std::isfinite(y[n])) << n;
    EXPECT_TRUE(std::isnan(y[8 + n])) << n;
    EXPECT_TRUE(std::isnan(y[16 + n])) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Vnni, NativeInt8Activations,
                         testing::Values(NativeCase{"cpu.w4a8.avx512vnni", 4, 128, false, false},
                                         NativeCase{"cpu.w4a8.avx512vnni", 4, 32, true, true},
                                         NativeCase{"cpu.w4a8.avx512vnni", 4, 0, true, false},
                                         NativeCase{"cpu.w8a8.avx512vnni", 8, 128, false, false},
                                         NativeCase{"cpu.w8a8.avx512vnni", 8, 64, true, true},
                                         NativeCase{"cpu.w8a8.avx512vnni", 8, 0, false, false},
                                         NativeCase{"cpu.int.blas.sgemm", 4, 64, true, true},
                                         NativeCase{"cpu.int.a8.avx2", 4, 128, false, false},
                                         NativeCase{"cpu.int.a8.avx2", 4, 32, true, true},
                                         NativeCase{"cpu.int.a8.avx2", 4, 0, true, false},
                                         NativeCase{"cpu.int.a8.avx2", 4, 40, true, false, 240},
                                         NativeCase{"cpu.int.a8.avx2", 4, 8, false, true},
                                         NativeCase{"cpu.int.a8.avx2", 8, 128, false, false},
                                         NativeCase{"cpu.int.a8.avx2", 8, 64, true, true},
                                         NativeCase{"cpu.int.a8.avx2", 8, 0, false, false},
                                         NativeCase{"cpu.int.a8.avx2", 8, 40, true, false, 240}),
                         [](const testing::TestParamInfo<NativeCase>& param) {
                           std::string name = fmt::format(
                               "{}_w{}_g{}{}{}_K{}", param.param.kernel, param.param.bits,
                               param.param.group, param.param.zeros ? "_zp" : "",
                               param.param.act_order ? "_ao" : "", param.param.K);
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// --- opt-in and selection -------------------------------------------------------------------
LinearProblem int4_problem() {
  Result<LinearProblem> p = LinearProblem::parse("int4:g128:K4096:N4096:a=bf16");
  EXPECT_TRUE(p.ok());
  return *p;
}

TEST(Int8ActivationAvx2Kernel, EveryOutputIsWithinFloatRoundingOfTheExactA8Sum) {
  // cpu.int.a8.avx2 sums code * x_i8 and the zero-point term exactly in int32 per group, so
  // against the exact sum of the a8 mode (the reference quantizer's codes and scales, in double)
  // only f32 rounding remains: per group one conversion, the scale product and the fma, then the
  // bias add: |y - exact| <= (G + 4) * 2^-24 * (sum_k |w_nk * x8_k| + |bias_n|) for G groups.
  const LinearKernel* kernel = find_kernel("cpu.int.a8.avx2");
  ASSERT_NE(kernel, nullptr);
  struct Shape {
    int bits;
    int64_t K, N;
    int group;
    bool zeros, act_order;
  };
  bool discriminates = false;
  for (const Shape& c :
       {Shape{4, 512, 136, 128, true, false}, Shape{4, 256, 72, 32, false, true},
        Shape{4, 240, 64, 40, true, true}, Shape{8, 384, 72, 384, true, false},
        Shape{8, 512, 64, 64, false, true}, Shape{4, 1024, 40, 1024, false, false}}) {
    Canonical weights = int_layer(c.bits, c.K, c.N, c.group, c.zeros, c.act_order, 41);
    auto& w = std::get<IntWeights>(weights.weights);
    std::mt19937 rng(43);
    std::uniform_real_distribution<float> bias(-1.0f, 1.0f);
    for (int64_t n = 0; n < c.N; ++n) w.bias.push_back(bias(rng));
    LinearProblem problem = LinearProblem::from_canonical(weights);
    problem.int8_activations = true;
    problem.m_max = 1;
    if (const Verdict v = kernel->check(problem, host()); !v.ok()) {
      GTEST_SKIP() << "cpu.int.a8.avx2 does not run here: " << v.to_string();
    }
    const std::vector<int32_t> group_of_k = int8_activation_groups(w);
    for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{15}, int64_t{100}}) {
      SCOPED_TRACE(fmt::format("int{} K={} N={} g{}{}{} M={}", c.bits, c.K, c.N, c.group,
                               c.zeros ? " zp" : "", c.act_order ? " act-order" : "", M));
      Tensor x = activations(DType::kF32, M, c.K, static_cast<uint32_t>(M + c.K));
      x.data_as<float>()[c.K / 2] = 40.0f;  // an outlier: its group's scale is coarse
      const std::vector<float> y = run(*kernel, weights, true, x);
      ASSERT_EQ(static_cast<int64_t>(y.size()), M * c.N);
      const float* xf = x.data_as<float>();
      const Int8Activations q = quantize_int8_activations(xf, M, c.K, group_of_k, w.num_groups);
      const double groups = static_cast<double>(w.num_groups);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < c.N; ++n) {
          double exact = w.bias[n];
          double exact_a16 = w.bias[n];
          double magnitude = std::fabs(w.bias[n]);
          for (int64_t k = 0; k < c.K; ++k) {
            const double wk = weights.dequant(n, k);
            const double x8 =
                static_cast<double>(q.codes[m * c.K + k]) * q.scales[m * q.groups + group_of_k[k]];
            exact += x8 * wk;
            exact_a16 += static_cast<double>(xf[m * c.K + k]) * wk;
            magnitude += std::fabs(x8 * wk);
          }
          const double bound = (groups + 4) * 0x1p-24 * magnitude;
          const double error = std::fabs(static_cast<double>(y[m * c.N + n]) - exact);
          ASSERT_LE(error, bound) << "m=" << m << " n=" << n;
          // The bound tells the modes apart: float activations would break it.
          discriminates = discriminates || std::fabs(exact_a16 - exact) > bound;
        }
      }
    }
  }
  EXPECT_TRUE(discriminates);
}

TEST(Int8ActivationSelection, OnAvx2TheAvx2KernelTakesDecodeAndBlasTheRest) {
  Result<Device> avx2 = simulate_target("cpu:avx2");
  ASSERT_TRUE(avx2.ok());
  for (std::string_view text :
       {"int4:g128:zp:K4096:N4096:a=bf16", "int8:g128:K4096:N4096:a=f32", "int4:g32:K2048:N512"}) {
    SCOPED_TRACE(text);
    Result<LinearProblem> p = LinearProblem::parse(text);
    ASSERT_TRUE(p.ok());
    p->m_min = 1;
    p->m_max = 4096;
    SelectionPolicy policy;
    policy.int8_activations = true;
    auto buckets = select_buckets(*p, *avx2, policy, "layer");
    ASSERT_TRUE(buckets.ok()) << buckets.status().to_string();
    ASSERT_EQ(buckets->size(), 2u);
    EXPECT_EQ((*buckets)[0].selection.kernel->name(), "cpu.int.a8.avx2");
    EXPECT_EQ((*buckets)[0].selection.problem.m_max, int_a8::kAvx2MaxRows);
    EXPECT_TRUE((*buckets)[0].selection.problem.int8_activations);
    EXPECT_EQ((*buckets)[1].selection.kernel->name(), "cpu.int.blas.sgemm");
    // Without the policy it never runs, and every bucket says why.
    auto plain = select_buckets(*p, *avx2, SelectionPolicy{}, "layer");
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    for (const BucketSelection& b : *plain) {
      EXPECT_NE(b.selection.kernel->name(), "cpu.int.a8.avx2");
      EXPECT_FALSE(b.selection.problem.int8_activations);
      bool listed = false;
      for (const Candidate& c : b.selection.candidates) {
        if (c.kernel->name() != "cpu.int.a8.avx2") continue;
        listed = true;
        EXPECT_EQ(c.verdict.reason, Reason::kActivationQuant) << c.verdict.to_string();
      }
      EXPECT_TRUE(listed);
    }
  }
  // AVX-512 VNNI machines keep their kernels at every M.
  Result<Device> avx512 = simulate_target("cpu:avx512");
  ASSERT_TRUE(avx512.ok());
  LinearProblem p = int4_problem();
  p.m_min = p.m_max = 1;
  SelectionPolicy policy;
  policy.int8_activations = true;
  auto s = select_kernel(p, *avx512, policy, "layer");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kernel->name(), "cpu.w4a8.avx512vnni");
}

TEST(Int8ActivationSelection, TheAvx2KernelRejectsWithCatalogueReasons) {
  const LinearKernel* k = find_kernel("cpu.int.a8.avx2");
  ASSERT_NE(k, nullptr);
  Result<Device> avx2 = simulate_target("cpu:avx2");
  Result<Device> generic = simulate_target("cpu:generic");
  ASSERT_TRUE(avx2.ok() && generic.ok());
  LinearProblem p = int4_problem();
  p.int8_activations = true;
  p.m_min = p.m_max = 1;
  EXPECT_TRUE(k->check(p, *avx2).ok()) << k->check(p, *avx2).to_string();
  EXPECT_EQ(k->check(p, *generic).reason, Reason::kMissingIsa);
  LinearProblem wide = p;
  wide.m_max = int_a8::kAvx2MaxRows + 1;
  const Verdict v = k->check(wide, *avx2);
  EXPECT_EQ(v.reason, Reason::kMRange);
  EXPECT_NE(v.detail.find("M1-128"), std::string::npos) << v.detail;
  LinearProblem a16 = p;
  a16.int8_activations = false;
  EXPECT_EQ(k->check(a16, *avx2).reason, Reason::kActivationQuant);
  LinearProblem two = p;
  two.bits = 2;
  EXPECT_EQ(k->check(two, *avx2).reason, Reason::kBits);
  Result<LinearProblem> odd = LinearProblem::parse("int8:g12:a8:K96:N64:a=bf16");
  ASSERT_TRUE(odd.ok());
  odd->m_min = odd->m_max = 1;
  EXPECT_EQ(k->check(*odd, *avx2).reason, Reason::kGroupSize);
}

TEST(Int8ActivationSelection, NeverWithoutThePolicyAndAlwaysWithIt) {
  Result<Device> device = simulate_target("cpu:avx512");
  ASSERT_TRUE(device.ok());
  SelectionPolicy policy;
  Result<Selection> plain = select_kernel(int4_problem(), *device, policy, "layer");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_FALSE(plain->problem.int8_activations);
  EXPECT_EQ(plain->kernel->name(), "cpu.w4a16.avx512");
  EXPECT_TRUE(plain->mode_reason.empty());
  for (const Candidate& c : plain->candidates) {
    if (c.kernel->name() == "cpu.w4a8.avx512vnni") {
      EXPECT_EQ(c.verdict.reason, Reason::kActivationQuant);
      EXPECT_NE(c.verdict.detail.find("--int8-activations"), std::string::npos);
    }
  }

  policy.int8_activations = true;
  Result<Selection> a8 = select_kernel(int4_problem(), *device, policy, "layer");
  ASSERT_TRUE(a8.ok()) << a8.status().to_string();
  EXPECT_TRUE(a8->problem.int8_activations);
  EXPECT_EQ(a8->kernel->name(), "cpu.w4a8.avx512vnni");
  EXPECT_NE(a8->mode_reason.find("--int8-activations"), std::string::npos);
  EXPECT_EQ(mode_label(a8->problem), "int activations a8");
  EXPECT_NE(a8->problem.to_string().find(":a8"), std::string::npos);
  for (const Candidate& c : a8->candidates) {
    if (c.kernel->name() == "cpu.w4a16.avx512" || c.kernel->name() == "cpu.w4a16.avx2") {
      EXPECT_EQ(c.verdict.reason, Reason::kActivationQuant) << c.kernel->name();
    }
  }
}

TEST(Int8ActivationSelection, WithoutVnniTheBlasPathRunsTheMode) {
  Result<Device> device = simulate_target("cpu:avx2");
  ASSERT_TRUE(device.ok());
  SelectionPolicy policy;
  policy.int8_activations = true;
  Result<Selection> a8 = select_kernel(int4_problem(), *device, policy, "layer");
  ASSERT_TRUE(a8.ok()) << a8.status().to_string();
  EXPECT_EQ(a8->kernel->name(), "cpu.int.blas.sgemm");
  for (const Candidate& c : a8->candidates) {
    if (c.kernel->name() == "cpu.w4a8.avx512vnni") {
      EXPECT_EQ(c.verdict.reason, Reason::kMissingIsa);
    }
  }
}

TEST(Int8ActivationSelection, GpuKernelsSayTheModeIsCpuOnly) {
  Result<Device> device = simulate_target("cuda:sm90");
  ASSERT_TRUE(device.ok());
  LinearProblem problem = int4_problem();
  problem.int8_activations = true;
  int gpu_kernels = 0;
  for (const LinearKernel* kernel : kernels_for(Platform::kCuda)) {
    if (kernel->platform() != Platform::kCuda) continue;
    ++gpu_kernels;
    const Verdict v = kernel->check(problem, *device);
    EXPECT_EQ(v.reason, Reason::kActivationQuant) << kernel->name() << ": " << v.to_string();
  }
  EXPECT_GT(gpu_kernels, 0);
}

TEST(Int8ActivationSelection, FloatWeightsIgnoreThePolicy) {
  Result<Device> device = simulate_target("cpu:avx512");
  ASSERT_TRUE(device.ok());
  SelectionPolicy policy;
  policy.int8_activations = true;
  Result<LinearProblem> fp8 = LinearProblem::parse("fp8:channel:K4096:N4096");
  ASSERT_TRUE(fp8.ok());
  Result<Selection> s = select_kernel(*fp8, *device, policy, "layer");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_FALSE(s->problem.int8_activations);
  EXPECT_EQ(s->problem.to_string().find(":a8"), std::string::npos);
}

TEST(Int8ActivationProblem, StringFormRoundTripsAndIsIntOnly) {
  Result<LinearProblem> p = LinearProblem::parse("int8:g64:zp:a8:K256:N512:a=f16");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->int8_activations);
  EXPECT_EQ(p->scheme_string(), "w8a8 g64 zp");
  Result<LinearProblem> again = LinearProblem::parse(p->to_string());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->int8_activations);
  EXPECT_EQ(again->to_string(), p->to_string());

  Result<LinearProblem> fp8 = LinearProblem::parse("fp8:channel:a8:K256:N512");
  ASSERT_FALSE(fp8.ok());
  EXPECT_NE(fp8.status().message().find("\"a8\""), std::string::npos) << fp8.status().message();
  Result<LinearProblem> twice = LinearProblem::parse("int4:g64:a8:a8:K256:N512");
  EXPECT_FALSE(twice.ok());
}

}  // namespace
}  // namespace qlinear
