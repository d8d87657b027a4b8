// cuda.fp8.marlin.sm80 — W8A16 FP8: e4m3 weights expanded to f16/bf16 in registers inside a
// Marlin-style mma.sync GEMM; activations stay 16-bit. Layout after prepare: Marlin tiles of the
// e4m3 bytes, channel scales (tensor scales are already per row), block scales as groups of
// block_k. Limits: sm >= 80, block_k 128 for block weights, f16/bf16 activations, K % 128,
// N % 64.
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Fp8MarlinSm80 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.fp8.marlin.sm80"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (cp.async), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_scheme(p, WeightScheme::kFp8));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    if (p.fp8_weight == Fp8WeightGranularity::kBlock && p.block_k != 128) {
      return Verdict::reject(
          Reason::kFp8Granularity,
          fmt::format("block weights need block_k 128, problem has {}x{}", p.block_n, p.block_k));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 128, 64));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_marlin_sm80() {
  static const Fp8MarlinSm80 kernel;
  return kernel;
}

}  // namespace qlinear
