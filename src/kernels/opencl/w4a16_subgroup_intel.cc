// opencl.w4a16.subgroup.intel — weight-only int4 GEMM for Intel GPUs: each 16-wide subgroup
// owns 16 output columns, loads packed codes with block reads, dequantizes in registers and
// accumulates in fp32 (f16 for the multiply). Layout after prepare: codes transposed to
// [N/16, K/8, 16] words so a subgroup block-reads one row; scales and zeros [G, N] f16.
// Act-order keeps the global g_idx (no permutation is passed; each row looks up its group).
// Limits: Intel GPU with fp16 and subgroup 16, 4 bits, groups multiple of 32 or channelwise,
// K % 32, N % 16, act-order only when K is not split across ranks.
// Tested on: not yet (the OpenCL backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"

namespace qlinear {
namespace {

class W4A16SubgroupIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return "opencl.w4a16.subgroup.intel"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_gpu(device));
    QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
    if (p.bits != 4) {
      return Verdict::reject(Reason::kBits, fmt::format("needs 4 bits, problem has {}", p.bits));
    }
    if (!is_channelwise(p) && p.group_size % 32 != 0) {
      return Verdict::reject(Reason::kGroupSize,
                             fmt::format("needs a group size multiple of 32 or channelwise, "
                                         "problem has {}",
                                         p.group_size));
    }
    if (p.act_order && k_partitioned(p)) {
      return Verdict::reject(
          Reason::kActOrder,
          fmt::format("act-order needs all of K on one rank, K={} of {}", p.K, p.full_K));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 32, 16));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_opencl_w4a16_subgroup_intel() {
  static const W4A16SubgroupIntel kernel;
  return kernel;
}

}  // namespace qlinear
