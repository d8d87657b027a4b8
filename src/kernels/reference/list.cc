// The reference kernels (scalar dequantize-then-GEMM, double accumulation): always correct, slow.
// They are appended to every platform's list, so a layer no other kernel takes still runs, and
// they are the oracle every other kernel is tested against.
#include <vector>

#include "kernels/registry.h"

// One line per kernel: X(<id>) names `const LinearKernel& kernel_<id>()` of its kernel file.
#define QLINEAR_REFERENCE_KERNELS(X) \
  X(reference_int)                   \
  X(reference_fp8)                   \
  X(reference_dense)

namespace qlinear {

#define QLINEAR_DECLARE_KERNEL(id) const LinearKernel& kernel_##id();
#define QLINEAR_KERNEL_ADDRESS(id) &kernel_##id(),
QLINEAR_REFERENCE_KERNELS(QLINEAR_DECLARE_KERNEL)

std::vector<const LinearKernel*> reference_kernels() {
  return {QLINEAR_REFERENCE_KERNELS(QLINEAR_KERNEL_ADDRESS)};
}

}  // namespace qlinear
