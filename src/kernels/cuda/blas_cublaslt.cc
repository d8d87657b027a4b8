// cuda.blas.cublaslt — the portable CUDA path: prepare() dequantizes any canonical weight (int
// 2/4/8 with groups, zero points and act-order; FP8 run as W8A16; dense) to the activation dtype
// once, and run() is one cuBLASLt GEMM with a bias epilogue. Costs 16-bit weight memory, takes
// every shape. Limits: sm >= 70, f16/bf16/f32 activations, FP8 in W8A16 mode only (W8A8 goes to
// cuda.fp8.cublaslt.sm89).
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class BlasCublasLt final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.blas.cublaslt"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 70) {
      return Verdict::reject(Reason::kCapability,
                             fmt::format("needs sm70 or newer, device is sm{}", device.sm));
    }
    if (p.scheme == WeightScheme::kFp8) {
      QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16, DType::kF32}));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_blas_cublaslt() {
  static const BlasCublasLt kernel;
  return kernel;
}

}  // namespace qlinear
