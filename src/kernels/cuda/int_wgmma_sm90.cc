// cuda.int.wgmma.sm90 | scheme: W4A16 / W8A16 int, groups 64 / 128 / channelwise, f16 or bf16
// activations, the prefill bucket (M above kCudaWoMmaMaxRows)
// planned: the Machete design (codes pre-shuffled so each warpgroup loads them with one TMA copy,
// dequantized in registers into wgmma's A operand, zero points pre-multiplied as -s*z), to beat
// the dequantized cuBLASLt GEMM (cuda.int.blas.cublaslt) above the decode bucket.
// status: no device code yet (has_device_code() is false), listed last so that it is never
// selected; on a real device it answers not-compiled ("planned"), on a simulated sm90 target its
// requirements.
// tested on: nothing (not written)
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class IntWgmmaSm90 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.int.wgmma.sm90"; }
  Family family() const override { return Family::kNative; }
  std::vector<int64_t> m_breakpoints() const override { return {kCudaWoMmaMaxRows + 1}; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm != 90) {
      return Verdict::reject(Reason::kCapability,
                             fmt::format("needs exactly sm90 (wgmma), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_int_problem(p));
    QL_REQUIRE(require_int_activations(p, /*int8_kernel=*/false));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits,
                             fmt::format("needs 4 or 8 bits, problem has {}", p.bits));
    }
    if (!is_channelwise(p) && p.group_size != 64 && p.group_size != 128) {
      return Verdict::reject(
          Reason::kGroupSize,
          fmt::format("needs group 64, 128 or channelwise, problem has {}", p.group_size));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    QL_REQUIRE(require_alignment(p, 64, 128));
    QL_REQUIRE(require_m_range(p, kCudaWoMmaMaxRows + 1, kUnboundedM));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_int_wgmma_sm90() {
  static const IntWgmmaSm90 kernel;
  return kernel;
}

}  // namespace qlinear
