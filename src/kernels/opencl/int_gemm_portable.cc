// opencl.int.gemm.portable | scheme: int weight-only w2/w4/w8 (a f32/bf16/f16, o f32/bf16/f16),
//   any group size incl. channelwise, zero points or symmetric, act-order (g_idx, also the ragged
//   groups of a row-parallel shard); OpenCL C 1.2 with no extension (no fp16, no subgroups)
// after prepare: the canonical words [K/pack, N] u32, scales [groups, N] f32, zero points
//   [groups, N] u8, g_idx [K] i32, bias [N] f32, each one buffer (int_gemm_portable.cl)
// limits: K a multiple of the rows per packed word; any N; any M
// tested on: PoCL 3.1 (CPU device, AMD EPYC) against reference.int.scalar in the kernel grid
#include <fmt/format.h>

#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.int.gemm.portable";

class IntGemmPortable final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& /*device*/) const override {
    QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
    if (p.bits != 2 && p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits, fmt::format("bits={}; handles 2, 4, 8", p.bits));
    }
    if (p.group_size <= 0 || (!p.act_order && p.K % p.group_size != 0)) {
      return Verdict::reject(Reason::kGroupSize,
                             fmt::format("group_size={} does not divide K={}", p.group_size, p.K));
    }
    if (p.K % (32 / p.bits) != 0) {
      return Verdict::reject(Reason::kAlignment,
                             fmt::format("K={} not a multiple of {}", p.K, 32 / p.bits));
    }
    return require_io_dtypes(p);
  }
#if defined(QLINEAR_WITH_OPENCL)
  bool has_device_code() const override { return true; }
  Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                            const LinearProblem& problem,
                                                            DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
    auto prepared = std::make_unique<opencl::PreparedIntKernel>(problem, *context, kName);
    QL_RETURN_IF_ERROR(prepared->load(*w, "int_gemm_portable.cl", "int_gemm", 0));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_int_gemm_portable() {
  static const IntGemmPortable kernel;
  return kernel;
}

}  // namespace qlinear
