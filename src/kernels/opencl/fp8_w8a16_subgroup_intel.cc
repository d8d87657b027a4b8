// opencl.fp8.w8a16.subgroup.intel — W8A16 FP8 for Intel GPUs: e4m3 weights expanded to f16 in
// registers (a 256-entry table in local memory), 16-bit activations, fp32 accumulation; the
// OpenCL default FP8 mode (W8A8 was slower than W8A16 on Intel GPUs, vLLM #43645). Layout after
// prepare: [N/16, K, 16] e4m3 bytes for subgroup block reads; per-row or block scales as fp32.
// Limits: Intel GPU with fp16 and subgroup 16, block_k a multiple of 32 for block weights,
// f16/bf16 activations, K % 32, N % 16.
// Tested on: not yet (the OpenCL backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"

namespace qlinear {
namespace {

class Fp8W8A16SubgroupIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return "opencl.fp8.w8a16.subgroup.intel"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_gpu(device));
    QL_REQUIRE(require_scheme(p, WeightScheme::kFp8));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    if (p.fp8_weight == Fp8WeightGranularity::kBlock && p.block_k % 32 != 0) {
      return Verdict::reject(Reason::kFp8Granularity,
                             fmt::format("block weights need block_k a multiple of 32, problem "
                                         "has {}x{}",
                                         p.block_n, p.block_k));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 32, 16));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a16_subgroup_intel() {
  static const Fp8W8A16SubgroupIntel kernel;
  return kernel;
}

}  // namespace qlinear
