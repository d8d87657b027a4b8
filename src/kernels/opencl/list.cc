// The OpenCL kernels, in priority order: selection takes the first one whose check() accepts.
// Order: the Intel GPU kernels first (subgroup W4A16, then both FP8 modes: the selector's mode
// table decides which of the two can accept), CLBlast last as the any-device path. To be
// justified with qlinear bench numbers once the backend is built.
#include <vector>

#include "kernels/registry.h"

// One line per kernel: X(<id>) names `const LinearKernel& kernel_<id>()` of its kernel file.
#define QLINEAR_OPENCL_KERNELS(X)    \
  X(opencl_int_subgroup_intel)       \
  X(opencl_int_gemm_portable)        \
  X(opencl_fp8_w8a16_subgroup_intel) \
  X(opencl_fp8_w8a8_dpas_intel)      \
  X(opencl_fp8_w8a16_portable)       \
  X(opencl_fp8_w8a8_portable)        \
  X(opencl_blas_clblast)

namespace qlinear {

#define QLINEAR_DECLARE_KERNEL(id) const LinearKernel& kernel_##id();
#define QLINEAR_KERNEL_ADDRESS(id) &kernel_##id(),
QLINEAR_OPENCL_KERNELS(QLINEAR_DECLARE_KERNEL)

std::vector<const LinearKernel*> opencl_kernels() {
  return {QLINEAR_OPENCL_KERNELS(QLINEAR_KERNEL_ADDRESS)};
}

}  // namespace qlinear
