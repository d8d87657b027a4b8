// opencl.int.subgroup.intel | scheme: int weight-only w4/w8 (a f32/bf16/f16, o f32/bf16/f16),
//   group sizes a multiple of the rows per word or channelwise, zero points or symmetric,
//   act-order (g_idx); Intel GPUs: 16-wide subgroups, cl_intel_subgroups block reads
// after prepare: as opencl.int.gemm.portable (the canonical [K/pack, N] words already keep the 16
//   columns of a subgroup contiguous for its block reads); int_subgroup_intel.cl
// limits: N % 16 (a subgroup owns 16 columns), 4 or 8 bits, K a multiple of the rows per word
// tested on: compiled offline with ocloc for tgllp (Xe-LP) and dg2-g10 (Xe-HPG) only; not run
//   (no Intel GPU here: `qlinear verify --device xpu` checks it on one)
#include <fmt/format.h>

#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.int.subgroup.intel";

class IntSubgroupIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_subgroups(device, 16));
    QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits, fmt::format("bits={}; handles 4, 8", p.bits));
    }
    if (p.group_size <= 0 || (!p.act_order && p.K % p.group_size != 0)) {
      return Verdict::reject(Reason::kGroupSize,
                             fmt::format("group_size={} does not divide K={}", p.group_size, p.K));
    }
    QL_REQUIRE(require_alignment(p, 32 / p.bits, 16));
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
    QL_RETURN_IF_ERROR(prepared->load(*w, "int_subgroup_intel.cl", "int_subgroup", 16));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_int_subgroup_intel() {
  static const IntSubgroupIntel kernel;
  return kernel;
}

}  // namespace qlinear
