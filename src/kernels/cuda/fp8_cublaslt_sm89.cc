// cuda.fp8.cublaslt.sm89 — W8A8 FP8 through cuBLASLt (the vendor-library "blas" path): per-token
// or per-tensor activation quantization, e4m3 x e4m3 GEMM with a vector-scale epilogue
// (s_a[m] * s_w[n] * acc + bias), so per-channel weight scales stay per channel. Layout after
// prepare: the checkpoint's [N, K] e4m3 (cuBLASLt's TN form). Limits: sm >= 89 (FP8 tensor
// cores), tensor or channel weight scales, K % 16 and N % 16 (cuBLASLt FP8 alignment).
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Fp8CublasLtSm89 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.fp8.cublaslt.sm89"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 89) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm89 or newer (FP8 tensor cores), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_scheme(p, WeightScheme::kFp8));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A8));
    if (p.fp8_weight == Fp8WeightGranularity::kBlock) {
      return Verdict::reject(Reason::kFp8Granularity,
                             fmt::format("needs tensor or channel weight scales, problem has "
                                         "block {}x{}",
                                         p.block_n, p.block_k));
    }
    if (p.act_quant == ActQuant::kDynamicGroup) {
      return Verdict::reject(Reason::kActivationQuant,
                             "needs per-token or per-tensor activation scales, problem has "
                             "dyn-group");
    }
    QL_REQUIRE(require_alignment(p, 16, 16));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_cublaslt_sm89() {
  static const Fp8CublasLtSm89 kernel;
  return kernel;
}

}  // namespace qlinear
