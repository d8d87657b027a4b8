// The native CPU FP8 kernels against a scalar double-precision computation of the formats.md §4.4
// GEMM semantics (weights dequantized with core/dtype.h, W8A8 activations through the reference
// quantizer), plus their check() verdicts. The registry-wide grid test covers the same kernels
// through the registry; this file pins the edge cases of their own layouts (ragged K and N, block
// scales, row blocks of the M >= 13 panel path, nested OpenMP).
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "convert/canonical.h"
#include "core/tensor.h"
#include "kernels/common/activation_quant.h"
#include "kernels/cpu/fp8_act_quant_avx512.h"
#include "kernels/cpu/fp8_cpu_common.h"
#include "kernels/cpu/fp8_dpbf16.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel.h"
#include "qlinear/dtype.h"
#include "support/kernel_run.h"

namespace qlinear {

const LinearKernel& kernel_cpu_fp8_w8a16_avx512();
const LinearKernel& kernel_cpu_fp8_w8a16_avx2();
const LinearKernel& kernel_cpu_fp8_w8a8_avx512();

namespace {

struct Case {
  int64_t M, K, N;
  Fp8WeightGranularity granularity;
  int block_n, block_k;
  DType act_dtype;
  ActQuant act;
};

std::string describe(const Case& c) {
  return "M=" + std::to_string(c.M) + " K=" + std::to_string(c.K) + " N=" + std::to_string(c.N) +
         " gran=" + std::string(fp8_weight_granularity_name(c.granularity)) +
         " block=" + std::to_string(c.block_n) + "x" + std::to_string(c.block_k) +
         " act=" + std::string(dtype_name(c.act_dtype)) +
         " aq=" + std::string(act_quant_name(c.act));
}

Canonical random_weights(const Case& c, std::mt19937& rng) {
  Fp8Weights w;
  w.K = c.K;
  w.N = c.N;
  w.granularity = c.granularity;
  w.block_n = c.block_n;
  w.block_k = c.block_k;
  w.activation = c.act;
  w.input_scale = 0.02f;
  std::uniform_int_distribution<int> code(0, 255);
  w.qweight.resize(static_cast<std::size_t>(c.N * c.K));
  for (auto& q : w.qweight) {
    int v = code(rng);
    while ((v & 0x7F) == 0x7F) v = code(rng);  // no NaN codes
    q = static_cast<uint8_t>(v);
  }
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  const int64_t scales =
      w.is_block() ? ((c.N + c.block_n - 1) / c.block_n) * ((c.K + c.block_k - 1) / c.block_k)
                   : c.N;
  for (int64_t i = 0; i < scales; ++i) w.scale.push_back(scale(rng));
  std::uniform_real_distribution<float> bias(-1.0f, 1.0f);
  for (int64_t n = 0; n < c.N; ++n) w.bias.push_back(bias(rng));
  Canonical canonical;
  canonical.name = "test.fp8";
  canonical.weights = std::move(w);
  canonical.shard_sizes = {c.N};
  return canonical;
}

LinearProblem problem_of(const Case& c, Fp8Mode mode) {
  LinearProblem p;
  p.scheme = WeightScheme::kFp8;
  p.fp8_weight = c.granularity;
  p.block_n = c.block_n;
  p.block_k = c.block_k;
  p.act_quant = c.act;
  p.fp8_mode = mode;
  p.K = p.full_K = c.K;
  p.N = p.full_N = c.N;
  p.act_dtype = c.act_dtype;
  p.has_bias = true;
  return p;
}

// x [M, K] in the case's dtype, and the same values as float.
Tensor random_activations(const Case& c, std::mt19937& rng, std::vector<float>* as_float) {
  Tensor x = test::host_tensor(c.act_dtype, {c.M, c.K});
  std::normal_distribution<float> value(0.0f, 1.0f);
  as_float->resize(static_cast<std::size_t>(c.M * c.K));
  for (int64_t i = 0; i < c.M * c.K; ++i) {
    const float v = value(rng);
    switch (c.act_dtype) {
      case DType::kBF16:
        x.data_as<uint16_t>()[i] = f32_to_bf16(v);
        (*as_float)[i] = bf16_to_f32(x.data_as<uint16_t>()[i]);
        break;
      case DType::kF16:
        x.data_as<uint16_t>()[i] = f32_to_f16(v);
        (*as_float)[i] = f16_to_f32(x.data_as<uint16_t>()[i]);
        break;
      default:
        x.data_as<float>()[i] = v;
        (*as_float)[i] = v;
    }
  }
  return x;
}

// y = x * W^T + bias in double, and sum |x||w| per output (the error budget's scale).
void expected(const Canonical& canonical, const std::vector<float>& x, int64_t M,
              std::vector<double>* y, std::vector<double>* magnitude) {
  const auto& w = std::get<Fp8Weights>(canonical.weights);
  y->assign(static_cast<std::size_t>(M * w.N), 0.0);
  magnitude->assign(y->size(), 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < w.N; ++n) {
      double sum = w.bias[n];
      double mag = std::fabs(w.bias[n]);
      for (int64_t k = 0; k < w.K; ++k) {
        const double product =
            double{x[m * w.K + k]} * f8e4m3_to_f32(w.qweight[n * w.K + k]) * w.weight_scale(n, k);
        sum += product;
        mag += std::fabs(product);
      }
      (*y)[m * w.N + n] = sum;
      (*magnitude)[m * w.N + n] = mag;
    }
  }
}

bool cpu_has(bool avx512) {
  const CpuFeatures f = detect_cpu_features();
  return avx512 ? (f.avx512f && f.avx512bw && f.avx512_bf16) : (f.avx2 && f.fma && f.f16c);
}

Device this_cpu() {
  Device d;
  d.platform = Platform::kCpu;
  d.cpu = detect_cpu_features();
  d.cores = 2;
  return d;
}

// Runs `kernel` on the case and compares with the double computation. W8A8 compares with the
// dequantized reference-quantizer activations, so only f32 summation error remains.
void run_case(const LinearKernel& kernel, Fp8Mode mode, const Case& c, double rel_tol,
              int threads = 0) {
  SCOPED_TRACE(std::string(kernel.name()) + " " + describe(c));
  std::mt19937 rng(static_cast<uint32_t>(c.M * 131 + c.K * 7 + c.N));
  const Canonical weights = random_weights(c, rng);
  std::vector<float> xf;
  const Tensor x = random_activations(c, rng, &xf);
  const LinearProblem problem = problem_of(c, mode);
  const Device device = this_cpu();
  const Verdict verdict = kernel.check(problem, device);
  ASSERT_TRUE(verdict.ok()) << verdict.to_string();
  auto prepared = test::prepare_on_cpu(kernel, weights, problem);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  Result<Tensor> y = test::run_on_cpu(**prepared, x, threads);
  ASSERT_TRUE(y.ok()) << y.status().to_string();

  std::vector<float> xa = xf;
  if (mode == Fp8Mode::kW8A8) {
    auto q = quantize_activations(xf.data(), c.M, c.K, w8a8_act_quant(problem), 0.02f,
                                  w8a8_act_group_k(problem));
    ASSERT_TRUE(q.ok());
    dequantize_activations(*q, xa.data());
  }
  std::vector<double> want;
  std::vector<double> magnitude;
  expected(weights, xa, c.M, &want, &magnitude);
  for (int64_t i = 0; i < c.M * c.N; ++i) {
    ASSERT_NEAR(y->data_as<float>()[i], want[i], rel_tol * magnitude[i] + 1e-6)
        << "at m=" << i / c.N << " n=" << i % c.N;
  }
}

std::vector<Case> w8a16_cases() {
  std::vector<Case> cases;
  // M covers the register paths (<= 6 avx2, <= 4 avx512), the buffered paths and ragged row
  // blocks; K and N are ragged against the 16-row panels and the 32..256-column chunks.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 16}, {300, 130}, {1000, 17}};
  for (const auto& [K, N] : shapes) {
    for (int64_t M : {1, 4, 7, 26}) {
      for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
        cases.push_back({M, K, N, Fp8WeightGranularity::kChannel, 0, 0, dt, ActQuant::kNone});
      }
      cases.push_back(
          {M, K, N, Fp8WeightGranularity::kBlock, 128, 128, DType::kBF16, ActQuant::kNone});
      cases.push_back({M, K, N, Fp8WeightGranularity::kBlock, 5, 32, DType::kF32, ActQuant::kNone});
      cases.push_back(
          {M, K, N, Fp8WeightGranularity::kBlock, 16, 512, DType::kF16, ActQuant::kNone});
    }
  }
  return cases;
}

// bf16 and f16 activations are exact in the kernels' two bf16 terms, f32 keeps 16 bits; the
// rest is f32 accumulation.
double tolerance(DType act) { return act == DType::kF32 ? 4e-5 : 2e-6; }

TEST(Fp8CpuKernels, W8a16Avx512MatchesScalarGemm) {
  if (!cpu_has(true)) GTEST_SKIP() << "CPU lacks avx512f/bw/bf16";
  for (const Case& c : w8a16_cases()) {
    run_case(kernel_cpu_fp8_w8a16_avx512(), Fp8Mode::kW8A16, c, tolerance(c.act_dtype));
  }
}

TEST(Fp8CpuKernels, W8a16Avx2MatchesScalarGemm) {
  if (!cpu_has(false)) GTEST_SKIP() << "CPU lacks avx2/fma/f16c";
  for (const Case& c : w8a16_cases())
    run_case(kernel_cpu_fp8_w8a16_avx2(), Fp8Mode::kW8A16, c, 2e-6);
}

TEST(Fp8CpuKernels, W8a8Avx512MatchesReferenceQuantizerGemm) {
  if (!cpu_has(true)) GTEST_SKIP() << "CPU lacks avx512f/bw/bf16";
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 16}, {300, 130}};
  for (const auto& [K, N] : shapes) {
    for (int64_t M : {1, 5, 13, 30}) {
      for (ActQuant act : {ActQuant::kDynamicToken, ActQuant::kDynamicTensor,
                           ActQuant::kStaticTensor, ActQuant::kNone}) {
        run_case(kernel_cpu_fp8_w8a8_avx512(), Fp8Mode::kW8A8,
                 {M, K, N, Fp8WeightGranularity::kChannel, 0, 0, DType::kBF16, act}, 2e-6);
      }
      // Block weights with per-group activations (group = block_k), and the weight-only
      // checkpoint forced to W8A8 (kNone: per-group of block_k).
      for (ActQuant act : {ActQuant::kDynamicGroup, ActQuant::kNone, ActQuant::kDynamicToken}) {
        run_case(kernel_cpu_fp8_w8a8_avx512(), Fp8Mode::kW8A8,
                 {M, K, N, Fp8WeightGranularity::kBlock, 128, 128, DType::kF32, act}, 2e-6);
      }
      // Channel weights with per-group activations (group 128).
      run_case(
          kernel_cpu_fp8_w8a8_avx512(), Fp8Mode::kW8A8,
          {M, K, N, Fp8WeightGranularity::kChannel, 0, 0, DType::kF16, ActQuant::kDynamicGroup},
          2e-6);
    }
  }
}

// The AVX-512 engine has two weight decoders (vbmi byte tables, or shift + f16 convert on CPUs
// without vbmi); the kernels use the one this CPU has, so this runs both on the same panels.
// Both decode exactly and sum in the same order, so their outputs are bit-identical.
TEST(Fp8CpuKernels, BothAvx512DecodersAgreeBitForBit) {
  if (!cpu_has(true)) GTEST_SKIP() << "CPU lacks avx512f/bw/bf16";
  if (!__builtin_cpu_supports("avx512vbmi")) GTEST_SKIP() << "CPU lacks avx512_vbmi";
  for (int64_t M : {1, 5, 12, 13, 40}) {
    const Case c{M, 300, 40, Fp8WeightGranularity::kBlock, 16, 64, DType::kBF16, ActQuant::kNone};
    SCOPED_TRACE(describe(c));
    std::mt19937 rng(static_cast<uint32_t>(M));
    const Canonical weights = random_weights(c, rng);
    const auto& w = std::get<Fp8Weights>(weights.weights);
    std::vector<float> xf;
    const Tensor x = random_activations(c, rng, &xf);
    std::vector<std::vector<float>> outputs;
    for (fp8_cpu::PanelLayout layout :
         {fp8_cpu::PanelLayout::kPairs, fp8_cpu::PanelLayout::kPairsVbmi}) {
      auto panels = fp8_cpu::make_panels(w, 64, layout, 1);
      ASSERT_TRUE(panels.ok()) << panels.status().to_string();
      fp8_cpu::Bf16Activations a;
      a.M = M;
      a.stride = panels->Kp;
      std::vector<uint16_t> hi(static_cast<std::size_t>(M * panels->Kp), 0);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < c.K; ++k)
          hi[m * panels->Kp + k] = x.data_as<uint16_t>()[m * c.K + k];
      }
      a.hi = hi.data();
      std::vector<float> y(static_cast<std::size_t>(M * c.N));
      std::vector<float> yt(static_cast<std::size_t>(2 * fp8_cpu::dpbf16_slot_floats(M)));
      fp8_cpu::run_dpbf16(*panels, a, MatrixView::dense(y.data(), DType::kF32, M, c.N), 2,
                          yt.data());
      outputs.push_back(y);
    }
    ASSERT_EQ(outputs[0], outputs[1]);
    std::vector<double> want;
    std::vector<double> magnitude;
    expected(weights, xf, M, &want, &magnitude);
    for (int64_t i = 0; i < M * c.N; ++i) {
      ASSERT_NEAR(outputs[0][i], want[i], 2e-6 * magnitude[i] + 1e-6) << "at " << i;
    }
  }
}

// The vectorized activation quantizer of cpu.fp8.w8a8.avx512 against the reference quantizer:
// every value and every scale bit-identical, on random rows and on the rounding edge cases
// (midpoints between e4m3fn neighbours, the subnormal boundary 2^-6, the underflow tie 2^-10,
// saturation at 448/464, zeros, an all-zero row hitting the scale floor).
TEST(Fp8CpuKernels, VectorActivationQuantizerMatchesTheReferenceBitForBit) {
  if (!cpu_has(true)) GTEST_SKIP() << "CPU lacks avx512f/bw";
  std::vector<float> edges = {0.0f,        -0.0f,        448.0f,
                              -448.0f,     464.0f,       465.0f,
                              -1e9f,       1.0f / 64,    1.0f / 64 - 1.0f / 4096,
                              1.0f / 1024, -1.0f / 1024, 3.0f / 2048};
  for (int c = 0; c < 126; ++c) {  // every midpoint between neighbouring positive codes
    const float a = f8e4m3_to_f32(static_cast<uint8_t>(c));
    const float b = f8e4m3_to_f32(static_cast<uint8_t>(c + 1));
    edges.push_back(0.5f * (a + b));
    edges.push_back(-0.5f * (a + b));
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (ActQuant kind : {ActQuant::kStaticTensor, ActQuant::kDynamicToken,
                          ActQuant::kDynamicTensor, ActQuant::kDynamicGroup}) {
      const int64_t M = 5;
      const int64_t K = static_cast<int64_t>(edges.size()) + 37;  // ragged against 16 and 64
      const int64_t group_k = 64;
      const int64_t chunk_k = 32;
      const int64_t Kp = (K + 63) / 64 * 64;
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(act_quant_name(kind)));
      Tensor x = test::host_tensor(dtype, {M, K});
      std::vector<float> xf(static_cast<std::size_t>(M * K));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          float v =
              m == 0 && k < static_cast<int64_t>(edges.size()) ? edges[k] : normal(rng) * (m + 1);
          if (m == 3) v = 0.0f;  // an all-zero row: the scale floor
          if (m == 4) v *= 1e-6f;
          if (dtype == DType::kF32) {
            x.data_as<float>()[m * K + k] = v;
          } else {
            const uint16_t bits = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
            x.data_as<uint16_t>()[m * K + k] = bits;
            v = dtype == DType::kBF16 ? bf16_to_f32(bits) : f16_to_f32(bits);
          }
          xf[m * K + k] = v;
        }
      }
      auto want = quantize_activations(xf.data(), M, K, kind, 1.0f, group_k);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      fp8_cpu::ActQuantRequest request;
      request.kind = kind;
      request.static_scale = 1.0f;
      request.group_k = group_k;
      request.Kp = Kp;
      request.chunk_k = chunk_k;
      const int64_t chunks = (K + chunk_k - 1) / chunk_k;
      std::vector<uint16_t> values(static_cast<std::size_t>(M * Kp), 0xFFFF);
      std::vector<float> scales(static_cast<std::size_t>(M * chunks));
      ASSERT_TRUE(
          fp8_cpu::quantize_activations_avx512(x.matrix(), request, values.data(), scales.data(), 2)
              .ok());
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < Kp; ++k) {
          const float expect = k < K ? f8e4m3_to_f32(want->codes[m * K + k]) : 0.0f;
          const float got = bf16_to_f32(values[m * Kp + k]);
          if (std::isnan(expect)) {  // an infinite input over an infinite scale
            ASSERT_TRUE(std::isnan(got)) << "m=" << m << " k=" << k;
            continue;
          }
          ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expect))
              << "m=" << m << " k=" << k << " x=" << (k < K ? xf[m * K + k] : 0.0f);
        }
        for (int64_t c = 0; c < chunks; ++c) {
          ASSERT_EQ(std::bit_cast<uint32_t>(scales[m * chunks + c]),
                    std::bit_cast<uint32_t>(want->scale(m, c * chunk_k)))
              << "m=" << m << " chunk " << c;
        }
      }
    }
  }
}

TEST(Fp8CpuKernels, RunsSingleThreadedInsideAParallelRegion) {
  if (!cpu_has(true) || !cpu_has(false)) GTEST_SKIP() << "CPU lacks avx512_bf16 or avx2";
  const Case c{20, 300, 70, Fp8WeightGranularity::kChannel, 0, 0, DType::kBF16, ActQuant::kNone};
#pragma omp parallel num_threads(2)
  {
    run_case(kernel_cpu_fp8_w8a16_avx512(), Fp8Mode::kW8A16, c, 2e-6);
    run_case(kernel_cpu_fp8_w8a16_avx2(), Fp8Mode::kW8A16, c, 2e-6, 3);
  }
}

TEST(Fp8CpuKernels, CheckNamesTheUnmetRequirement) {
  const Case c{1, 256, 64, Fp8WeightGranularity::kChannel, 0, 0, DType::kBF16, ActQuant::kNone};
  Device avx2;
  avx2.platform = Platform::kCpu;
  avx2.cpu.avx2 = avx2.cpu.fma = avx2.cpu.f16c = true;
  Device avx512 = avx2;
  avx512.cpu.avx512f = avx512.cpu.avx512bw = avx512.cpu.avx512vl = true;
  avx512.cpu.avx512_vnni = avx512.cpu.avx512_bf16 = true;
  const LinearProblem w8a16 = problem_of(c, Fp8Mode::kW8A16);
  const LinearProblem w8a8 = problem_of(c, Fp8Mode::kW8A8);

  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx512().check(w8a16, avx2).reason, Reason::kMissingIsa);
  EXPECT_EQ(kernel_cpu_fp8_w8a8_avx512().check(w8a8, avx2).reason, Reason::kMissingIsa);
  EXPECT_TRUE(kernel_cpu_fp8_w8a16_avx2().check(w8a16, avx2).ok());
  EXPECT_TRUE(kernel_cpu_fp8_w8a16_avx512().check(w8a16, avx512).ok());
  EXPECT_TRUE(kernel_cpu_fp8_w8a8_avx512().check(w8a8, avx512).ok());
  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx512().check(w8a16, Device{}).reason, Reason::kMissingIsa);

  // The other FP8 mode.
  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx512().check(w8a8, avx512).reason, Reason::kFp8Mode);
  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx2().check(w8a8, avx512).reason, Reason::kFp8Mode);
  EXPECT_EQ(kernel_cpu_fp8_w8a8_avx512().check(w8a16, avx512).reason, Reason::kFp8Mode);

  // Block shapes: 128x128 and 64x32 run, block_k=100 does not.
  LinearProblem block = w8a16;
  block.fp8_weight = Fp8WeightGranularity::kBlock;
  block.block_n = block.block_k = 128;
  EXPECT_TRUE(kernel_cpu_fp8_w8a16_avx512().check(block, avx512).ok());
  block.block_n = 64;
  block.block_k = 32;
  EXPECT_TRUE(kernel_cpu_fp8_w8a16_avx2().check(block, avx512).ok());
  block.block_k = 100;
  const Verdict ragged = kernel_cpu_fp8_w8a16_avx512().check(block, avx512);
  EXPECT_EQ(ragged.reason, Reason::kFp8Granularity);
  EXPECT_NE(ragged.detail.find("100"), std::string::npos) << ragged.detail;

  // Not FP8, wrong platform, dtypes.
  LinearProblem int4 = w8a16;
  int4.scheme = WeightScheme::kInt;
  int4.fp8_mode = Fp8Mode::kNone;
  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx512().check(int4, avx512).reason, Reason::kScheme);
  Device gpu = avx512;
  gpu.platform = Platform::kCuda;
  EXPECT_EQ(kernel_cpu_fp8_w8a8_avx512().check(w8a8, gpu).reason, Reason::kWrongPlatform);
  LinearProblem int_act = w8a16;
  int_act.act_dtype = DType::kI32;
  EXPECT_EQ(kernel_cpu_fp8_w8a16_avx2().check(int_act, avx512).reason, Reason::kDtype);
  // Outputs may be f32, bf16 or f16 (written by the epilogue), nothing else.
  LinearProblem bf16_out = w8a8;
  bf16_out.out_dtype = DType::kBF16;
  EXPECT_TRUE(kernel_cpu_fp8_w8a8_avx512().check(bf16_out, avx512).ok());
  LinearProblem int_out = w8a8;
  int_out.out_dtype = DType::kI32;
  EXPECT_EQ(kernel_cpu_fp8_w8a8_avx512().check(int_out, avx512).reason, Reason::kDtype);
}

TEST(Fp8CpuKernels, StaticW8a8WithoutInputScaleIsAnError) {
  const Case c{1, 64, 16,           Fp8WeightGranularity::kChannel,
               0, 0,  DType::kBF16, ActQuant::kStaticTensor};
  std::mt19937 rng(1);
  Canonical weights = random_weights(c, rng);
  std::get<Fp8Weights>(weights.weights).input_scale = 0.0f;
  auto prepared =
      test::prepare_on_cpu(kernel_cpu_fp8_w8a8_avx512(), weights, problem_of(c, Fp8Mode::kW8A8));
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.status().message().find("input_scale"), std::string::npos);
}

TEST(Fp8CpuKernels, RunRejectsMismatchedViews) {
  if (!cpu_has(false)) GTEST_SKIP() << "CPU lacks avx2/fma/f16c";
  const Case c{2, 64, 16, Fp8WeightGranularity::kChannel, 0, 0, DType::kF32, ActQuant::kNone};
  std::mt19937 rng(2);
  const Canonical weights = random_weights(c, rng);
  auto prepared =
      test::prepare_on_cpu(kernel_cpu_fp8_w8a16_avx2(), weights, problem_of(c, Fp8Mode::kW8A16));
  ASSERT_TRUE(prepared.ok());
  const Tensor x = test::host_tensor(DType::kF32, {2, 63});
  const Result<Tensor> y = test::run_on_cpu(**prepared, x);
  ASSERT_FALSE(y.ok());
  const Status& status = y.status();
  EXPECT_NE(status.message().find("K=64"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace qlinear
