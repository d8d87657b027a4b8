// cuda.w4a16.machete.sm90 — weight-only int4/int8 GEMM on Hopper (wgmma + TMA), the Machete
// design: the prepared layout pre-shuffles codes so each warpgroup loads them with one TMA copy;
// zero points are pre-multiplied as -s*z. Limits: exactly sm90 (wgmma is sm90a-only), groups
// 64/128/channelwise, K % 64, N % 128, act-order only when K is not split across ranks.
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class MacheteSm90 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.w4a16.machete.sm90"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm != 90) {
      return Verdict::reject(Reason::kCapability,
                             fmt::format("needs exactly sm90 (wgmma), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits,
                             fmt::format("needs 4 or 8 bits, problem has {}", p.bits));
    }
    if (!is_channelwise(p) && p.group_size != 64 && p.group_size != 128) {
      return Verdict::reject(
          Reason::kGroupSize,
          fmt::format("needs group 64, 128 or channelwise, problem has {}", p.group_size));
    }
    if (p.act_order && k_partitioned(p)) {
      return Verdict::reject(
          Reason::kActOrder,
          fmt::format("act-order needs all of K on one rank, K={} of {}", p.K, p.full_K));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 64, 128));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_w4a16_machete_sm90() {
  static const MacheteSm90 kernel;
  return kernel;
}

}  // namespace qlinear
