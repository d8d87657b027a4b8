// Every one of the 256 e4m3fn codes through each CPU FP8 W8A16 kernel: row n of the weight holds
// code n at k = 0, the activation is one-hot at k = 0 and the scale 1, so y[n] is exactly
// decode(n) * 1 + 0. The AVX2 kernel must match core's f8e4m3_to_f32 bit for bit, NaN codes
// (0x7F, 0xFF) included: its shift decode once made them +-480. Canonical weights are built by
// hand here, bypassing the load-time rejection of NaN codes, to test the kernels themselves.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "convert/canonical.h"
#include "core/tensor.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel.h"
#include "qlinear/dtype.h"
#include "support/kernel_run.h"

namespace qlinear {

const LinearKernel& kernel_cpu_fp8_w8a16_avx512();
const LinearKernel& kernel_cpu_fp8_w8a16_avx2();

namespace {

constexpr int64_t kCodes = 256;
constexpr int64_t kK = 64;

Canonical all_codes_weights() {
  Fp8Weights w;
  w.K = kK;
  w.N = kCodes;
  w.granularity = Fp8WeightGranularity::kChannel;
  w.activation = ActQuant::kNone;
  w.qweight.assign(static_cast<std::size_t>(kCodes * kK), 0);
  for (int64_t n = 0; n < kCodes; ++n) w.qweight[static_cast<std::size_t>(n * kK)] = uint8_t(n);
  w.scale.assign(kCodes, 1.0f);
  Canonical c;
  c.name = "test.all_codes";
  c.weights = std::move(w);
  c.shard_sizes = {kCodes};
  return c;
}

LinearProblem problem_for() {
  LinearProblem p;
  p.scheme = WeightScheme::kFp8;
  p.fp8_weight = Fp8WeightGranularity::kChannel;
  p.act_quant = ActQuant::kNone;
  p.fp8_mode = Fp8Mode::kW8A16;
  p.K = p.full_K = kK;
  p.N = p.full_N = kCodes;
  p.act_dtype = DType::kF32;
  p.has_bias = false;
  return p;
}

// y [M, 256] for one-hot activations, or an empty vector when the kernel cannot run here.
std::vector<float> run_all_codes(const LinearKernel& kernel, int64_t M) {
  LinearProblem problem = problem_for();
  problem.out_dtype = DType::kF32;
  const Device& device = test::cpu_context().device();
  if (!kernel.check(problem, device).ok()) return {};
  auto prepared = test::prepare_on_cpu(kernel, all_codes_weights(), problem);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return {};
  Tensor x = test::host_tensor(DType::kF32, {M, kK});
  for (int64_t i = 0; i < M * kK; ++i) x.data_as<float>()[i] = i % kK == 0 ? 1.0f : 0.0f;
  Result<Tensor> y = test::run_on_cpu(**prepared, x, 1);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  if (!y.ok()) return {};
  return test::as_floats(*y);
}

// decode(code) * 1 + 0 in float: what an exact decoder followed by one FMA gives (-0 becomes +0).
uint32_t expected_bits(int code) {
  volatile float one = 1.0f;
  volatile float zero = 0.0f;
  return std::bit_cast<uint32_t>(f8e4m3_to_f32(static_cast<uint8_t>(code)) * one + zero);
}

TEST(Fp8DecodeCodes, ReferenceDecoderGivesSignedQuietNans) {
  EXPECT_EQ(std::bit_cast<uint32_t>(f8e4m3_to_f32(0x7F)), 0x7FC00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(f8e4m3_to_f32(0xFF)), 0xFFC00000u);
  EXPECT_EQ(f8e4m3_to_f32(0x7E), 448.0f);
}

TEST(Fp8DecodeCodes, Avx2DecodesEveryCodeBitForBit) {
  const CpuFeatures f = detect_cpu_features();
  if (!(f.avx2 && f.fma && f.f16c)) GTEST_SKIP() << "CPU lacks avx2/fma/f16c";
  // M = 1 decodes into registers, M = 8 into the L1 panel: both paths.
  for (int64_t M : {1, 8}) {
    const std::vector<float> y = run_all_codes(kernel_cpu_fp8_w8a16_avx2(), M);
    ASSERT_EQ(y.size(), static_cast<std::size_t>(M * kCodes));
    for (int64_t m = 0; m < M; ++m) {
      for (int code = 0; code < kCodes; ++code) {
        const float got = y[static_cast<std::size_t>(m * kCodes + code)];
        EXPECT_EQ(std::bit_cast<uint32_t>(got), expected_bits(code))
            << "M=" << M << " m=" << m << " code=0x" << std::hex << code << " got " << got;
      }
    }
  }
}

TEST(Fp8DecodeCodes, EveryCpuKernelAgreesOnEveryCode) {
  const std::vector<float> avx2 = run_all_codes(kernel_cpu_fp8_w8a16_avx2(), 1);
  const std::vector<float> avx512 = run_all_codes(kernel_cpu_fp8_w8a16_avx512(), 1);
  if (avx2.empty() || avx512.empty()) GTEST_SKIP() << "needs both the avx2 and avx512 kernels";
  for (int code = 0; code < kCodes; ++code) {
    if ((code & 0x7F) == 0x7F) {  // bf16 dot products need not keep a NaN's payload
      EXPECT_TRUE(std::isnan(avx2[code]) && std::isnan(avx512[code])) << "code " << code;
      EXPECT_EQ(std::signbit(avx2[code]), code == 0xFF);
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(avx2[code]), std::bit_cast<uint32_t>(avx512[code]))
          << "code " << code;
    }
  }
}

}  // namespace
}  // namespace qlinear
