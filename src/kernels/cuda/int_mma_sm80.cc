// cuda.int.mma.sm80 | scheme: W4A16 / W8A16 int (GPTQ, AWQ, AutoRound, compressed-tensors), sym or
// zero points, groups that are multiples of 32 or channelwise, act-order; f16 or bf16 activations,
// f32 / bf16 / f16 outputs
// after prepare: codes repacked on the GPU into mma.m16n8k16 B-fragment order (16 bytes per lane
// per step, 16-column tiles), act-order rows sorted by group; scales [groups, N] f16 when exact,
// else f32; zero points u8 [groups, N] (wo_mma.cu)
// run: 128-column blocks, cp.async pipeline over K, dequantized in registers, tensor cores,
// scale per 32 rows; on sm90 a cluster of up to 8 blocks splits K and reduces through DSMEM
// limits: sm >= 80, K % 32 == 0, act-order only with all of K on this rank
// tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class IntMmaSm80 final : public CudaDeviceKernel<cuda_prepare_wo_mma> {
 public:
  std::string_view name() const override { return "cuda.int.mma.sm80"; }
  Family family() const override { return Family::kNative; }
  std::vector<int64_t> m_breakpoints() const override { return {kCudaWoMmaMaxRows + 1}; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (mma.sync bf16, cp.async), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_int_problem(p));
    QL_REQUIRE(require_int_activations(p, /*int8_kernel=*/false));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits,
                             fmt::format("needs 4 or 8 bits, problem has {}", p.bits));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    if (p.group_size % 32 != 0) {
      return Verdict::reject(
          Reason::kGroupSize,
          fmt::format("needs a group size that is a multiple of 32 (or channelwise), problem has "
                      "{}",
                      p.group_size));
    }
    if (p.act_order && k_partitioned(p)) {
      return Verdict::reject(
          Reason::kActOrder,
          fmt::format("act-order needs all of K on one rank, K={} of {}", p.K, p.full_K));
    }
    QL_REQUIRE(require_alignment(p, 32, 1));
    QL_REQUIRE(require_m_range(p, 1, kCudaWoMmaMaxRows));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_int_mma_sm80() {
  static const IntMmaSm80 kernel;
  return kernel;
}

}  // namespace qlinear
