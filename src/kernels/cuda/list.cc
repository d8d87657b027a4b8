// The CUDA kernels, in priority order: selection takes the first one whose check() accepts.
// Order (prior_art.md §8, to be replaced by qlinear's own bench/results numbers once the backend
// is built): Machete beats Marlin above M ~ 32-64 on H100 and Marlin needs mma.sync, which tops
// out near 75% of Hopper's peak, so sm90 tries Machete first; FP8 block (DeepGEMM design, up to
// 1550 TFLOP/s on H800) and cuBLASLt FP8 (1388 TFLOP/s per-tensor on H200) run W8A8; Marlin FP8
// runs W8A16 where FP8 tensor cores are missing; the dequantize + cuBLASLt path takes the rest.
#include <vector>

#include "kernels/registry.h"

// One line per kernel: X(<id>) names `const LinearKernel& kernel_<id>()` of its kernel file.
#define QLINEAR_CUDA_KERNELS(X) \
  X(cuda_w4a16_machete_sm90)    \
  X(cuda_w4a16_marlin_sm80)     \
  X(cuda_fp8_block_sm90)        \
  X(cuda_fp8_cublaslt_sm89)     \
  X(cuda_fp8_marlin_sm80)       \
  X(cuda_blas_cublaslt)

namespace qlinear {

#define QLINEAR_DECLARE_KERNEL(id) const LinearKernel& kernel_##id();
#define QLINEAR_KERNEL_ADDRESS(id) &kernel_##id(),
QLINEAR_CUDA_KERNELS(QLINEAR_DECLARE_KERNEL)

std::vector<const LinearKernel*> cuda_kernels() {
  return {QLINEAR_CUDA_KERNELS(QLINEAR_KERNEL_ADDRESS)};
}

}  // namespace qlinear
