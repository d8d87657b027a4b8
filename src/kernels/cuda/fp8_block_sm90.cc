// cuda.fp8.block.sm90 — W8A8 block-scaled FP8 GEMM (128x128 weight blocks, 1x128 activation
// groups quantized at run time), the DeepGEMM design: wgmma with per-block scale promotion in
// fp32. Layout after prepare: [N, K] e4m3 plus the scale grid, transposed M-major activation
// scales. Limits: sm >= 90, block 128x128 only, dyn-group activations, K % 128, N % 64.
// Tested on: not yet (the CUDA backend is not compiled in this build).
#include <fmt/format.h>

#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

class Fp8BlockSm90 final : public CudaKernel {
 public:
  std::string_view name() const override { return "cuda.fp8.block.sm90"; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 90) {
      return Verdict::reject(Reason::kCapability,
                             fmt::format("needs sm90 or newer (wgmma), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_scheme(p, WeightScheme::kFp8));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A8));
    if (p.fp8_weight != Fp8WeightGranularity::kBlock || p.block_n != 128 || p.block_k != 128) {
      return Verdict::reject(
          Reason::kFp8Granularity,
          fmt::format(
              "needs 128x128 weight blocks, problem has {}",
              p.fp8_weight == Fp8WeightGranularity::kBlock
                  ? fmt::format("block {}x{}", p.block_n, p.block_k)
                  : std::string(p.fp8_weight == Fp8WeightGranularity::kTensor ? "tensor"
                                                                              : "channel")));
    }
    if (p.act_quant != ActQuant::kDynamicGroup) {
      return Verdict::reject(Reason::kActivationQuant, "needs dyn-group (1x128) activation scales");
    }
    QL_REQUIRE(require_alignment(p, 128, 64));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_block_sm90() {
  static const Fp8BlockSm90 kernel;
  return kernel;
}

}  // namespace qlinear
