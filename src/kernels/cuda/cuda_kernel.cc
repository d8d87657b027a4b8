#include "kernels/cuda/cuda_kernel.h"

namespace qlinear {

bool cuda_backend_compiled() {
#if defined(QLINEAR_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

const BackendInfo& CudaKernel::backend() const {
  static const BackendInfo kInfo{Platform::kCuda, cuda_backend_compiled(), "CUDA",
                                 "QLINEAR_WITH_CUDA", "cuda"};
  return kInfo;
}

}  // namespace qlinear
