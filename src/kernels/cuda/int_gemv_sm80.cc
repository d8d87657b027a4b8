// cuda.int.gemv.sm80 | scheme: W4A16 / W8A16 int (GPTQ, AWQ, AutoRound, compressed-tensors), sym or
// zero points, power-of-two groups >= 32 or channelwise, act-order; f16 or bf16 activations,
// f32 / bf16 / f16 outputs; the decode bucket (4-bit M <= kCudaGemvMaxRows = 16, 8-bit
// M <= kCudaGemvMaxRows8 = 8: the mma kernel keeps 8-bit M 9-16)
// after prepare: codes in wo_mma.cu's 16-byte fragment order (16-column tiles, N padded to 16, K
// to 64), act-order rows sorted by group; scales / zero points as per-tile column pairs
// run: y^T = W x^T on mma.m16n8k16 (weights as A, the x rows as one n8 tile, two for M 9-16), one
// warp per 16-column tile and slice of K; 4-bit codes stream through a per-warp cp.async ring in
// shared memory (3 stages of 2 steps in flight) and are dequantized with the offset left in (an mma
// of ones sums x for the correction); 8-bit codes through registers (8 x 16-byte loads per lane,
// two stages of 4 for K >= N); fixed-order reduction of the K slices (int_gemv.cu) limits: sm >=
// 80, K % 32 == 0, act-order only with all of K on this rank tested on: NVIDIA H200 (sm90),
// tests/device grid
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class IntGemvSm80 final : public CudaDeviceKernel<cuda_prepare_int_gemv> {
 public:
  std::string_view name() const override { return "cuda.int.gemv.sm80"; }
  Family family() const override { return Family::kNative; }
  std::vector<int64_t> m_breakpoints() const override {
    return {kCudaGemvMaxRows8 + 1, kCudaGemvMaxRows + 1};
  }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 80) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm80 or newer (mma.sync bf16), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_int_problem(p));
    QL_REQUIRE(require_int_activations(p, /*int8_kernel=*/false));
    if (p.bits != 4 && p.bits != 8) {
      return Verdict::reject(Reason::kBits,
                             fmt::format("needs 4 or 8 bits, problem has {}", p.bits));
    }
    QL_REQUIRE(require_act_dtype(p, {DType::kF16, DType::kBF16}));
    const int gs = p.group_size;
    const bool one_group = gs >= p.K && !p.act_order;
    if (!one_group && (gs < 32 || (gs & (gs - 1)) != 0)) {
      return Verdict::reject(
          Reason::kGroupSize,
          fmt::format("needs a power-of-two group size >= 32 (or channelwise), problem has {}",
                      gs));
    }
    if (p.act_order && k_partitioned(p)) {
      return Verdict::reject(
          Reason::kActOrder,
          fmt::format("act-order needs all of K on one rank, K={} of {}", p.K, p.full_K));
    }
    QL_REQUIRE(require_alignment(p, 32, 1));
    QL_REQUIRE(require_m_range(p, 1, p.bits == 4 ? kCudaGemvMaxRows : kCudaGemvMaxRows8));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_int_gemv_sm80() {
  static const IntGemvSm80 kernel;
  return kernel;
}

}  // namespace qlinear
