// cuda.w4a16.marlin.sm80 — weight-only int4/int8 GEMM for Ampere and later (mma.sync,
// cp.async pipelines), the Marlin design: codes re-tiled into 16x64 tiles of the mma fragment
// order, scales permuted to match. Limits: sm >= 80, 4 or 8 bits, zero points with 4 bits only,
// groups 32/64/128/channelwise, K % 128, N % 64 (tiles are not padded). Act-order works with K
// split across ranks (the global g_idx is kept).
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class MarlinSm80 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.w4a16.marlin.sm80"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (cp.async), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits,
                             fmt::format("needs 4 or 8 bits, problem has {}", p.bits));
    }
    if (!is_channelwise(p) && p.group_size != 32 && p.group_size != 64 && p.group_size != 128) {
      return Verdict::reject(
          Reason::kGroupSize,
          fmt::format("needs group 32, 64, 128 or channelwise, problem has {}", p.group_size));
    }
    if (p.has_zeros && p.bits != 4) {
      return Verdict::reject(Reason::kZeroPoints,
                             fmt::format("zero points need 4 bits, problem has {}", p.bits));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 128, 64));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_w4a16_marlin_sm80() {
  static const MarlinSm80 kernel;
  return kernel;
}

}  // namespace qlinear
