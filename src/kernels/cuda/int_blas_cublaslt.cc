// cuda.int.blas.cublaslt | scheme: int 2/4/8 bits, any group, zero points, act-order (every
// canonical int layer) | after prepare: W dequantized once on the GPU to [N, K] in the activation
// dtype (bf16 / f16; f32 for f32 activations: 2-4x the int weight memory) | run: one cuBLASLt GEMM
// with a bias epilogue, or an f32 GEMM + epilogue kernel for mixed 16-bit (act, out) pairs
// limits: sm >= 80 | tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Entry final : public CudaDeviceKernel<cuda_prepare_blas> {
 public:
  std::string_view name() const override { return "cuda.int.blas.cublaslt"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (bf16 cuBLASLt), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_int_problem(p));
    QL_REQUIRE(require_int_activations(p, /*int8_kernel=*/false));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_int_blas_cublaslt() {
  static const Entry kernel;
  return kernel;
}

}  // namespace qlinear
