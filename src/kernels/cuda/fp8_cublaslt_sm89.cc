// cuda.fp8.cublaslt.sm89 | scheme: FP8 W8A8: e4m3 weights with tensor or channel scales and
// per-token / per-tensor / static activation scales (sm89+), or 128x128 weight blocks with 1x128
// activation groups (sm90, DeepSeek style); any activation dtype, f32 / bf16 / f16 outputs
// after prepare: the checkpoint's [N, K] e4m3 (cuBLASLt's TN form) and its scales (one scalar
// when every row shares it and activations are per-tensor; else the per-row vector; block grids
// in cuBLASLt's BLK128x128 layout) (fp8_w8a8_cublaslt.cu)
// run: the fused activation quantizer (bit-identical to kernels/common/activation_quant.h) into
// the workspace, then one cuBLASLt FP8 GEMM with SCALAR / OUTER_VEC / VEC128 x BLK128x128 scaling
// and a bias epilogue
// limits: sm >= 89 (block scales sm >= 90), K % 16 == 0 and N % 16 == 0 (FP8 tensor-core
// alignment), y rows 16-byte aligned
// tested on: NVIDIA H200 (sm90), tests/device grid
#include <fmt/format.h>

#include "kernels/common/activation_quant.h"
#include "kernels/common/requirements.h"
#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {
namespace {

// Block-scaled FP8 (BLK128x128 weights x VEC128 activations) through cuBLASLt on sm90: its TN form
// has algorithms from M = 4 (tests/device's probe, H200 2026-12-01), inside this kernel's M range.
constexpr bool kBlockScalingWired = true;

class Fp8CublasLtSm89 final : public CudaDeviceKernel<cuda_prepare_fp8_w8a8> {
 public:
  std::string_view name() const override { return "cuda.fp8.cublaslt.sm89"; }
  Family family() const override { return Family::kNative; }
  std::vector<int64_t> m_breakpoints() const override { return {kCudaWoMmaMaxRows + 1}; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    if (device.sm < 89) {
      return Verdict::reject(
          Reason::kCapability,
          fmt::format("needs sm89 or newer (FP8 tensor cores), device is sm{}", device.sm));
    }
    QL_REQUIRE(require_fp8_problem(p));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A8));
    const ActQuant act = w8a8_act_quant(p);
    if (p.fp8_weight == Fp8WeightGranularity::kBlock) {
      if (!kBlockScalingWired) {
        return Verdict::reject(Reason::kFp8Granularity,
                               fmt::format("block-scaled W8A8 ({}x{} blocks) is not wired to "
                                           "cuBLASLt yet; block weights run W8A16",
                                           p.block_n, p.block_k));
      }
      if (device.sm < 90) {
        return Verdict::reject(
            Reason::kCapability,
            fmt::format("block-scaled FP8 needs sm90 (cuBLASLt BLK128x128), device is sm{}",
                        device.sm));
      }
      if (p.block_n != 128 || p.block_k != 128) {
        return Verdict::reject(
            Reason::kFp8Granularity,
            fmt::format("needs 128x128 weight blocks, problem has {}x{}", p.block_n, p.block_k));
      }
      if (act != ActQuant::kDynamicGroup || w8a8_act_group_k(p) != 128) {
        return Verdict::reject(Reason::kActivationQuant,
                               fmt::format("block weights need dyn-group 1x128 activations, "
                                           "problem has {}",
                                           act_quant_name(act)));
      }
    } else if (act == ActQuant::kDynamicGroup) {
      return Verdict::reject(Reason::kActivationQuant,
                             "tensor or channel weights need per-token or per-tensor activation "
                             "scales, problem has dyn-group");
    }
    QL_REQUIRE(require_alignment(p, 16, 16));
    // Below the crossover the W8A16 mma kernel streams the same bytes without quantizing x.
    QL_REQUIRE(require_m_range(p, kCudaWoMmaMaxRows + 1, kUnboundedM));
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_cuda_fp8_cublaslt_sm89() {
  static const Fp8CublasLtSm89 kernel;
  return kernel;
}

}  // namespace qlinear
