// cuda.fp8.blas.cublaslt | scheme: FP8 e4m3 weights run as W8A16 (tensor, channel or any block
// scales) | after prepare: W = code * scale dequantized once on the GPU to [N, K] in the activation
// dtype | run: one cuBLASLt GEMM (see cuda.int.blas.cublaslt) | limits: sm >= 80, W8A16 mode only
// (W8A8 is cuda.fp8.cublaslt.sm89) | tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Entry final : public CudaDeviceKernel<cuda_prepare_blas> {
 public:
  std::string_view name() const override { return "cuda.fp8.blas.cublaslt"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (bf16 cuBLASLt), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_fp8_problem(p));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_blas_cublaslt() {
  static const Entry kernel;
  return kernel;
}

}  // namespace qlinear
