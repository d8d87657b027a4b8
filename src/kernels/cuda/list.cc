// The CUDA kernels, in priority order: selection takes the first one whose check() accepts.
// Order (bench/results/h200.md, measured on an H200 with weights rotated past the L2):
//   - cuda.int.gemv.sm80 first: the decode kernel (M <= kCudaGemvMaxRows), weights as the A
//     operand of mma.sync so no tensor-core work is spent on padding rows of the weights;
//   - cuda.int.mma.sm80 / cuda.fp8.w8a16.mma.sm80 next: the weight-only kernels stream the
//     packed codes once; below their M limit they beat the dequantized bf16 GEMM;
//   - cuda.fp8.cublaslt.sm89 runs W8A8 checkpoints (the FP8 mode table picks W8A8 where it
//     accepts);
//   - the blas entries take every remaining layer (dequantized once to 16 bits, cuBLASLt);
//   - cuda.int.wgmma.sm90 last: planned (no device code yet), so it is never selected.
#include <vector>

#include "kernels/registry.h"

// One line per kernel: X(<id>) names `const LinearKernel& kernel_<id>()` of its kernel file.
#define QLINEAR_CUDA_KERNELS(X) \
  X(cuda_int_gemv_sm80)         \
  X(cuda_int_mma_sm80)          \
  X(cuda_fp8_w8a16_mma_sm80)    \
  X(cuda_fp8_cublaslt_sm89)     \
  X(cuda_int_blas_cublaslt)     \
  X(cuda_fp8_blas_cublaslt)     \
  X(cuda_dense_blas_cublaslt)   \
  X(cuda_int_wgmma_sm90)

namespace qlinear {

#define QLINEAR_DECLARE_KERNEL(id) const LinearKernel& kernel_##id();
#define QLINEAR_KERNEL_ADDRESS(id) &kernel_##id(),
QLINEAR_CUDA_KERNELS(QLINEAR_DECLARE_KERNEL)

std::vector<const LinearKernel*> cuda_kernels() {
  return {QLINEAR_CUDA_KERNELS(QLINEAR_KERNEL_ADDRESS)};
}

}  // namespace qlinear
