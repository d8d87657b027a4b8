// cpu.int.i16.avx2: the int16 activation quantizer (hand-computed codes: rounding, all-zero and
// non-finite blocks, the largest magnitudes of either sign, the residual row of f32 inputs), the
// AVX2 quantizer against that contract bit for bit, the activation block of each group size, the
// kernel's output within the error bound docs/design.md derives ("int16 activations"), its error
// against the reference kernel per activation dtype, and where selection uses it (M <= 15 on
// AVX2) and why it refuses what it refuses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/common/activation_quant.h"
#include "kernels/cpu/int_i16_avx2.h"
#include "kernels/registry.h"
#include "kernels/select.h"
#include "qlinear/dtype.h"
#include "support/int_layer.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

constexpr std::string_view kKernel = "cpu.int.i16.avx2";

// --- the quantizer (the contract) ------------------------------------------------------------

TEST(Int16ActivationQuant, HandComputedCodesWhenTheScaleIsOne) {
  // absmax 32767 -> s = 1 exactly, so q = RNE(x): ties go to the even neighbour.
  const std::vector<float> x = {32767.0f, 2.5f, 3.5f, -2.5f, 0.49f, -32767.0f, 1.5f, -0.5f};
  const Int16Activations q = quantize_int16_activations(x.data(), 1, 8, 8, false);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 1.0f);
  const std::vector<int16_t> expected = {32767, 2, 4, -2, 0, -32767, 2, 0};
  EXPECT_EQ(q.codes, expected);
}

TEST(Int16ActivationQuant, HandComputedCodesOfAPowerOfTwoScale) {
  // absmax 32767 * 2^-10 -> s = 2^-10 exactly; x = n * 2^-10 + 0.5 * 2^-10 ties to even n.
  const float s = std::ldexp(1.0f, -10);
  const std::vector<float> x = {32767 * s, 100.5f * s, 101.5f * s, -100.5f * s,
                                0.25f * s, -0.75f * s, 7.0f * s,   -32767 * s};
  const Int16Activations q = quantize_int16_activations(x.data(), 1, 8, 8, false);
  EXPECT_EQ(q.scales[0], s);
  const std::vector<int16_t> expected = {32767, 100, 102, -100, 0, -1, 7, -32767};
  EXPECT_EQ(q.codes, expected);
}

TEST(Int16ActivationQuant, TheLargestMagnitudeOfEitherSignMapsToPlusOrMinus32767) {
  // The block's maximum is negative: it maps to -32767 (never -32768: the code range is
  // symmetric), and the other values scale by the same s.
  const std::vector<float> x = {-3.0f, 1.5f,  0.0f, 3.0f,  -1.5f, 0.75f, -0.0f, 2.999f,
                                1.0f,  -1.0f, 2.0f, -2.0f, 0.5f,  -0.5f, 0.25f, 0.125f};
  const Int16Activations q = quantize_int16_activations(x.data(), 1, 16, 8, false);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 3.0f / 32767.0f);
  EXPECT_EQ(q.scales[1], 2.0f / 32767.0f);
  EXPECT_EQ(q.codes[0], -32767);
  EXPECT_EQ(q.codes[3], 32767);
  EXPECT_EQ(q.codes[1], static_cast<int16_t>(std::nearbyint(1.5f / q.scales[0])));
  EXPECT_EQ(q.codes[11], -32767);
  EXPECT_EQ(q.codes[10], 32767);
  for (int16_t c : q.codes) EXPECT_GE(c, -32767);
}

TEST(Int16ActivationQuant, AllZeroBlocksGetTheFloorScaleAndZeroCodes) {
  std::vector<float> x(24, 0.0f);
  x[20] = 1.0f;  // the third block is not zero
  const Int16Activations q = quantize_int16_activations(x.data(), 1, 24, 8, true);
  ASSERT_EQ(q.scales.size(), 6u);  // 2 rows (q, q_lo) x 3 blocks
  EXPECT_EQ(q.scales[0], kInt16ActScaleFloor);
  EXPECT_EQ(q.scales[1], kInt16ActScaleFloor);
  EXPECT_EQ(q.scales[2], 1.0f / 32767.0f);
  EXPECT_EQ(q.scales[3], kInt16ActScaleFloor * kInt16ActResidualScale);
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(q.codes[k], 0);
    EXPECT_EQ(q.codes[24 + k], 0);
  }
  EXPECT_EQ(q.codes[20], 32767);
}

TEST(Int16ActivationQuant, NonFiniteBlocksGetNanScalesAndZeroCodes) {
  std::vector<float> x(16, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[12] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(16, 0.5f);
  y[9] = -std::numeric_limits<float>::infinity();
  x.insert(x.end(), y.begin(), y.end());
  const Int16Activations q = quantize_int16_activations(x.data(), 2, 16, 8, true);
  // Row 0: both blocks non-finite; row 1: only the second.
  for (int r : {0, 1}) {
    EXPECT_TRUE(std::isnan(q.scales[r * 2]));
    EXPECT_TRUE(std::isnan(q.scales[r * 2 + 1]));
  }
  EXPECT_EQ(q.scales[4], 0.5f / 32767.0f);
  EXPECT_TRUE(std::isnan(q.scales[5]));
  for (int k = 0; k < 16; ++k) EXPECT_EQ(q.codes[k], 0);
  for (int k = 8; k < 16; ++k) EXPECT_EQ(q.codes[32 + k], 0);
  EXPECT_EQ(q.codes[32], 32767);
}

TEST(Int16ActivationQuant, EveryCodeIsWithinHalfAStepAndTheResidualWithin2ToTheMinus31) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t M = 3;
  const int64_t K = 384;
  for (int64_t block : {8, 32, 128}) {
    std::vector<float> x(static_cast<size_t>(M * K));
    for (float& v : x) v = dist(rng);
    x[5] = 40.0f;  // an outlier
    const Int16Activations one = quantize_int16_activations(x.data(), M, K, block, false);
    const Int16Activations two = quantize_int16_activations(x.data(), M, K, block, true);
    const int64_t blocks = K / block;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t b = 0; b < blocks; ++b) {
        float absmax = 0.0f;
        for (int64_t k = b * block; k < (b + 1) * block; ++k) {
          absmax = std::max(absmax, std::fabs(x[m * K + k]));
        }
        const float s = one.scales[m * blocks + b];
        EXPECT_EQ(s, absmax / 32767.0f);
        EXPECT_EQ(two.scales[2 * m * blocks + b], s);
        for (int64_t k = b * block; k < (b + 1) * block; ++k) {
          const double xv = x[m * K + k];
          const double hi = static_cast<double>(one.codes[m * K + k]) * s;
          EXPECT_EQ(two.codes[2 * m * K + k], one.codes[m * K + k]);
          // Half a step, plus the rounding of the float division x / s (|x / s| <= 32767).
          EXPECT_LE(std::fabs(xv - hi), (0.5 + 32767.0 * 0x1p-24) * s) << "k=" << k;
          const double lo = static_cast<double>(two.codes[(2 * m + 1) * K + k]) *
                            two.scales[(2 * m + 1) * blocks + b];
          EXPECT_LE(std::fabs(xv - hi - lo), 0x1p-31 * absmax) << "k=" << k;
        }
      }
    }
  }
}

TEST(Int16ActivationQuant, ActivationBlocks) {
  using int_i16::activation_block;
  EXPECT_EQ(activation_block(32), 32);
  EXPECT_EQ(activation_block(64), 64);
  EXPECT_EQ(activation_block(96), 96);
  EXPECT_EQ(activation_block(128), 128);
  EXPECT_EQ(activation_block(256), 128);
  EXPECT_EQ(activation_block(2048), 128);
  EXPECT_EQ(activation_block(192), 96);
  EXPECT_EQ(activation_block(264), 88);  // channelwise K = 264
  EXPECT_EQ(activation_block(536), 8);   // 8 * 67: no larger multiple of 8 divides it
}

bool cpu_has_avx2() {
  Result<Device> cpu = detect_device("cpu");
  return cpu.ok() && cpu->cpu.avx2 && cpu->cpu.fma && cpu->cpu.f16c;
}

// The code of column k in row r of the AVX2 quantizer's pairs (int_i16_avx2.h's order).
int16_t unpacked_code(const std::vector<uint32_t>& pairs, int64_t K, int bits, int64_t r,
                      int64_t k) {
  const int64_t per_word = 32 / bits;
  const int64_t d = k / per_word;
  const int64_t i = k % per_word;
  const int64_t half = per_word / 2;
  const uint32_t pair = pairs[r * K / 2 + d * half + i % half];
  return static_cast<int16_t>(i < half ? pair & 0xFFFFu : pair >> 16);
}

TEST(Int16ActivationQuant, Avx2QuantizerMatchesTheContractBitForBit) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const int64_t M = 3;
  const int64_t K = 256;
  for (int bits : {4, 8}) {
    for (int64_t block : {8, 64, 128}) {
      for (bool split : {false, true}) {
        std::vector<float> x(static_cast<size_t>(M * K));
        for (float& v : x) v = dist(rng);
        std::fill(x.begin() + K, x.begin() + K + block, 0.0f);   // an all-zero block
        x[2 * K + 3] = std::numeric_limits<float>::quiet_NaN();  // a non-finite block
        x[2 * K + K - 1] = 1e-36f * 3.0f;                        // a tiny value elsewhere
        const Int16Activations ref = quantize_int16_activations(x.data(), M, K, block, split);
        const int64_t R = split ? 2 * M : M;
        const int64_t blocks = K / block;
        std::vector<uint32_t> pairs(static_cast<size_t>(R * K / 2), 0xDEADBEEFu);
        std::vector<float> scales(static_cast<size_t>(R * blocks), -1.0f);
        std::vector<int32_t> qsums(static_cast<size_t>(R * blocks), -1);
        int_i16::quantize_rows_i16_avx2(x.data(), M, K, block, bits, split, pairs.data(),
                                        scales.data(), qsums.data());
        SCOPED_TRACE(fmt::format("bits={} block={} split={}", bits, block, split));
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t b = 0; b < blocks; ++b) {
            const float want = ref.scales[r * blocks + b];
            const float got = scales[r * blocks + b];
            EXPECT_TRUE(std::memcmp(&want, &got, sizeof(float)) == 0 ||
                        (std::isnan(want) && std::isnan(got)))
                << "r=" << r << " b=" << b << ": " << got << " vs " << want;
            int32_t sum = 0;
            for (int64_t k = b * block; k < (b + 1) * block; ++k) {
              sum += ref.codes[r * K + k];
              ASSERT_EQ(unpacked_code(pairs, K, bits, r, k), ref.codes[r * K + k])
                  << "r=" << r << " k=" << k;
            }
            EXPECT_EQ(qsums[r * blocks + b], sum) << "r=" << r << " b=" << b;
          }
        }
      }
    }
  }
}

// --- the kernel --------------------------------------------------------------------------------

struct Layer {
  Canonical canonical;
  std::vector<double> w;  // dequantized [N, K]
};

// test::int_layer plus a bias, and its dequantized weights.
Layer make_layer(int bits, int64_t K, int64_t N, int group, bool zeros, bool act_order,
                 uint32_t seed) {
  Layer l;
  l.canonical = test::int_layer(bits, K, N, group, zeros, act_order, seed);
  auto& w = std::get<IntWeights>(l.canonical.weights);
  for (int64_t n = 0; n < N; ++n) w.bias.push_back(0.25f * static_cast<float>(n % 7) - 0.5f);
  l.w.resize(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) l.w[n * K + k] = l.canonical.dequant(n, k);
  }
  return l;
}

// Gaussian activations with one outlier per row, as `dtype`, and their exact f32 values.
Tensor make_x(int64_t M, int64_t K, DType dtype, uint32_t seed, std::vector<float>& values) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor x = test::host_tensor(dtype, {M, K});
  values.resize(static_cast<size_t>(M * K));
  for (int64_t i = 0; i < M * K; ++i) {
    float v = dist(rng);
    if (i % K == 17) v = 30.0f;
    if (dtype == DType::kF32) {
      x.data_as<float>()[i] = v;
    } else {
      const uint16_t h = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
      x.data_as<uint16_t>()[i] = h;
      v = dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
    values[i] = v;
  }
  return x;
}

const LinearKernel& i16_kernel() {
  const LinearKernel* kernel = find_kernel(kKernel);
  EXPECT_NE(kernel, nullptr);
  return *kernel;
}

std::vector<float> run_kernel(const LinearKernel& kernel, const Layer& l, const Tensor& x,
                              DType act) {
  LinearProblem p = LinearProblem::from_canonical(l.canonical);
  p.act_dtype = act;
  p.out_dtype = DType::kF32;
  p.m_min = p.m_max = x.shape()[0];
  auto prepared = test::prepare_on_cpu(kernel, l.canonical, p);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return {};
  Result<Tensor> y = test::run_on_cpu(**prepared, x);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  if (!y.ok()) return {};
  return std::vector<float>(y->data_as<float>(), y->data_as<float>() + y->numel());
}

TEST(Int16ActivationKernel, EveryOutputIsWithinTheDocumentedBound) {
  // |y_kernel - y| <= sum_b s_b * (1/2 + 2^-9) * sum_{k in b} |w_nk| + 2^-18 * (sum_k |x_k w_nk|
  // + |bias|): the int16 rounding of each activation (half a step s_b of its block, plus the
  // float division) and the f32 arithmetic after the exact int32 dot products (docs/design.md).
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  struct Shape {
    int bits;
    int64_t K, N;
    int group;
    bool zeros, act_order;
  };
  for (const Shape& c : {Shape{4, 512, 136, 128, true, false}, Shape{4, 256, 64, 32, false, true},
                         Shape{8, 384, 72, 384, true, false}, Shape{8, 512, 64, 64, false, true},
                         Shape{4, 1024, 40, 1024, false, false}}) {
    const Layer l = make_layer(c.bits, c.K, c.N, c.group, c.zeros, c.act_order, 3);
    const auto& w = std::get<IntWeights>(l.canonical.weights);
    const int64_t block = int_i16::activation_block(c.group);
    for (DType act : {DType::kBF16, DType::kF16}) {
      for (int64_t M : {int64_t{1}, int64_t{3}}) {
        SCOPED_TRACE(fmt::format("int{} K={} N={} g{} {} M={}", c.bits, c.K, c.N, c.group,
                                 dtype_name(act), M));
        std::vector<float> xv;
        const Tensor x = make_x(M, c.K, act, 9, xv);
        const std::vector<float> y = run_kernel(i16_kernel(), l, x, act);
        ASSERT_EQ(static_cast<int64_t>(y.size()), M * c.N);
        // The kernel quantizes x in the weight rows' order: blocks are runs of the permuted x.
        std::vector<int64_t> order(static_cast<size_t>(c.K));
        for (int64_t k = 0; k < c.K; ++k) order[k] = k;
        if (c.act_order) {
          std::stable_sort(order.begin(), order.end(),
                           [&](int64_t a, int64_t b) { return w.g_idx[a] < w.g_idx[b]; });
        }
        std::vector<float> xp(static_cast<size_t>(M * c.K));
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t k = 0; k < c.K; ++k) xp[m * c.K + k] = xv[m * c.K + order[k]];
        }
        const Int16Activations q = quantize_int16_activations(xp.data(), M, c.K, block, false);
        double worst = 0.0;
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < c.N; ++n) {
            double exact = w.bias[n];
            double magnitude = std::fabs(w.bias[n]);
            double bound = 0.0;
            for (int64_t k = 0; k < c.K; ++k) {
              const double wk = l.w[n * c.K + order[k]];
              exact += static_cast<double>(xp[m * c.K + k]) * wk;
              magnitude += std::fabs(static_cast<double>(xp[m * c.K + k]) * wk);
              bound += q.scales[m * (c.K / block) + k / block] * (0.5 + 0x1p-9) * std::fabs(wk);
            }
            bound += 0x1p-18 * magnitude;
            const double error = std::fabs(static_cast<double>(y[m * c.N + n]) - exact);
            ASSERT_LE(error, bound) << "m=" << m << " n=" << n;
            worst = std::max(worst, error / bound);
          }
        }
        // The bound is not vacuous: the rounding is there and takes a visible part of it.
        EXPECT_GT(worst, 0.02);
      }
    }
  }
}

double relative_frobenius(const std::vector<float>& y, const std::vector<float>& ref) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diff += (static_cast<double>(y[i]) - ref[i]) * (static_cast<double>(y[i]) - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST(Int16ActivationKernel, ErrorAgainstTheReferenceKernelPerActivationDtype) {
  // Measured on a Llama-like layer (int4 g128 asym, K = 2048): f32 activations keep f32
  // accuracy through the residual row; bf16/f16 ones see the int16 rounding only.
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  const LinearKernel* reference = find_kernel("reference.int.scalar");
  ASSERT_NE(reference, nullptr);
  for (int bits : {4, 8}) {
    const Layer l = make_layer(bits, 2048, 256, 128, true, false, 21);
    for (DType act : {DType::kF32, DType::kBF16, DType::kF16}) {
      std::vector<float> xv;
      const Tensor x = make_x(4, 2048, act, 17, xv);
      const std::vector<float> y = run_kernel(i16_kernel(), l, x, act);
      const std::vector<float> ref = run_kernel(*reference, l, x, act);
      ASSERT_EQ(y.size(), ref.size());
      const double error = relative_frobenius(y, ref);
      std::cout << fmt::format(
          "[ measure  ] int{} g128 K=2048 x={}: relative Frobenius error "
          "vs reference.int.scalar {:.2e}\n",
          bits, dtype_name(act), error);
      EXPECT_LE(error, act == DType::kF32 ? 1e-6 : 1e-4) << dtype_name(act);
      EXPECT_GT(error, 0.0);
    }
  }
}

// --- selection ---------------------------------------------------------------------------------

LinearProblem parsed(std::string_view text) {
  Result<LinearProblem> p = LinearProblem::parse(text);
  EXPECT_TRUE(p.ok()) << text;
  return p.ok() ? *p : LinearProblem{};
}

TEST(Int16ActivationSelection, DecodeBucketOnAvx2AndThePanelEngineAbove) {
  Result<Device> avx2 = simulate_target("cpu:avx2");
  ASSERT_TRUE(avx2.ok());
  for (std::string_view text : {"int4:g128:zp:K4096:N4096:a=bf16", "int8:g128:K4096:N4096:a=f32",
                                "int4:g2048:K2048:N512:a=f16"}) {
    SCOPED_TRACE(text);
    LinearProblem p = parsed(text);
    p.m_min = 1;
    p.m_max = 4096;
    auto buckets = select_buckets(p, *avx2, SelectionPolicy{}, "layer");
    ASSERT_TRUE(buckets.ok()) << buckets.status().to_string();
    ASSERT_EQ(buckets->size(), 2u);
    EXPECT_EQ((*buckets)[0].selection.kernel->name(), kKernel);
    EXPECT_EQ((*buckets)[0].selection.problem.m_max, int_i16::kMaxRows);
    EXPECT_NE((*buckets)[1].selection.kernel->name().find("a16.avx2"), std::string::npos);
  }
  // AVX-512 machines keep their kernels at every M.
  Result<Device> avx512 = simulate_target("cpu:avx512");
  ASSERT_TRUE(avx512.ok());
  LinearProblem p = parsed("int4:g128:K4096:N4096:a=bf16");
  p.m_min = p.m_max = 1;
  auto s = select_kernel(p, *avx512, SelectionPolicy{}, "layer");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kernel->name(), "cpu.w4a16.avx512");
}

TEST(Int16ActivationSelection, RejectsWithCatalogueReasons) {
  Result<Device> avx2 = simulate_target("cpu:avx2");
  Result<Device> generic = simulate_target("cpu:generic");
  ASSERT_TRUE(avx2.ok() && generic.ok());
  const LinearKernel& k = i16_kernel();
  LinearProblem p = parsed("int4:g128:K4096:N4096:a=bf16");
  p.m_min = p.m_max = 1;
  EXPECT_TRUE(k.check(p, *avx2).ok());
  EXPECT_EQ(k.check(p, *generic).reason, Reason::kMissingIsa);
  LinearProblem wide = p;
  wide.m_max = int_i16::kMaxRows + 1;
  Verdict v = k.check(wide, *avx2);
  EXPECT_EQ(v.reason, Reason::kMRange);
  EXPECT_NE(v.detail.find("M1-15"), std::string::npos) << v.detail;
  LinearProblem two = p;
  two.bits = 2;
  EXPECT_EQ(k.check(two, *avx2).reason, Reason::kBits);
  LinearProblem a8 = p;
  a8.int8_activations = true;
  EXPECT_EQ(k.check(a8, *avx2).reason, Reason::kActivationQuant);
  LinearProblem odd = parsed("int8:g12:K96:N64:a=bf16");  // 8-bit words allow 12; runs need 8
  odd.m_min = odd.m_max = 1;
  v = k.check(odd, *avx2);
  EXPECT_EQ(v.reason, Reason::kGroupSize);
  EXPECT_NE(v.detail.find("group_size=12"), std::string::npos) << v.detail;
  LinearProblem fp8 = p;
  fp8.scheme = WeightScheme::kFp8;
  EXPECT_EQ(k.check(fp8, *avx2).reason, Reason::kScheme);
}

}  // namespace
}  // namespace qlinear
