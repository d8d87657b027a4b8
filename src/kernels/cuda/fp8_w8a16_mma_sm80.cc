// cuda.fp8.w8a16.mma.sm80 | scheme: FP8 e4m3 weights as W8A16 (tensor, channel, or block scales
// with block_k a multiple of 32); f16 or bf16 activations, f32 / bf16 / f16 outputs
// after prepare: e4m3 bytes repacked on the GPU into mma.m16n8k16 B-fragment order; scales
// expanded to [K / block_k, N] f32 (x 2^8, see below) (wo_mma.cu)
// run: the int kernel's pipeline; e4m3 -> f16 by moving bit fields (exactly code * 2^-8, no
// conversion instruction needed on sm80), bf16 activations through f32
// limits: sm >= 80, K % 32 == 0, W8A16 mode (W8A8 is cuda.fp8.cublaslt.sm89)
// tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Fp8W8a16MmaSm80 final : public CudaDeviceKernel<cuda_prepare_wo_mma> {
 public:
  std::string_view name() const override { return "cuda.fp8.w8a16.mma.sm80"; }
  Family family() const override { return Family::kNative; }
  std::vector<int64_t> m_breakpoints() const override { return {kCudaWoMmaMaxRows + 1}; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (mma.sync bf16, cp.async), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_fp8_problem(p));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    if (p.fp8_weight == Fp8WeightGranularity::kBlock && p.block_k % 32 != 0) {
      return Verdict::reject(Reason::kFp8Granularity,
                             fmt::format("block weights need block_k a multiple of 32, problem has "
                                         "{}x{}",
                                         p.block_n, p.block_k));
    }
    QL_REQUIRE(require_alignment(p, 32, 1));
    QL_REQUIRE(require_m_range(p, 1, kCudaWoMmaMaxRows));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_w8a16_mma_sm80() {
  static const Fp8W8a16MmaSm80 kernel;
  return kernel;
}

}  // namespace qlinear
