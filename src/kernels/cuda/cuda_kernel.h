// The CUDA backend's registry entries (see kernels/backend_kernel.h for how they answer
// selection in a build without QLINEAR_WITH_CUDA).
#pragma once

#include "kernels/backend_kernel.h"

namespace qlinear {

// True when this binary contains the CUDA device code.
bool cuda_backend_compiled();

class CudaKernel : public BackendKernel {
 protected:
  const BackendInfo& backend() const final;
};

}  // namespace qlinear
