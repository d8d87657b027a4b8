// opencl.fp8.w8a8.dpas.intel — W8A8 FP8 for Intel GPUs with XMX: activations quantized per token
// or per tensor to e4m3 at run time, converted to f16 tiles for the DPAS (cl_intel_subgroup_
// matrix_multiply_accumulate) multiply, and scaled in the epilogue (s_a[m] * s_w[n]). Layout
// after prepare: VNNI-packed [K/2, N, 2] e4m3 pairs. Limits: Intel GPU with fp16 and subgroup
// 16, tensor or channel weight scales, per-token or per-tensor activations, K % 32, N % 16.
// Tested on: not yet (the OpenCL backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"

namespace qlinear {
namespace {

class Fp8W8A8DpasIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return "opencl.fp8.w8a8.dpas.intel"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_gpu(device));
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
    QL_REQUIRE(require_alignment(p, 32, 16));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a8_dpas_intel() {
  static const Fp8W8A8DpasIntel kernel;
  return kernel;
}

}  // namespace qlinear
