// cuda.dense.blas.cublaslt | scheme: unquantized f32 / bf16 / f16 weights | after prepare: W
// converted once to [N, K] in the activation dtype | run: one cuBLASLt GEMM with a bias epilogue
// (bf16 x bf16 or f16 x f16 with f32 accumulation; f32 activations: f32 GEMM, no TF32)
// limits: sm >= 80 | tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Entry final : public CudaDeviceKernel<cuda_prepare_blas> {
 public:
  std::string_view name() const override { return "cuda.dense.blas.cublaslt"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (bf16 cuBLASLt), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_dense_problem(p));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_dense_blas_cublaslt() {
  static const Entry kernel;
  return kernel;
}

}  // namespace qlinear
