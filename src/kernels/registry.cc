// The registry: the per-backend lists (each in its backend's list.cc) joined per platform.
#include "kernels/registry.h"

#include <vector>

namespace qlinear {

std::string_view family_name(Family family) {
  switch (family) {
    case Family::kNative:
      return "native";
    case Family::kBlas:
      return "blas";
    case Family::kReference:
      return "reference";
  }
  return "unknown";
}

std::vector<const LinearKernel*> kernels_for(Platform platform) {
  std::vector<const LinearKernel*> kernels;
  switch (platform) {
    case Platform::kCpu:
      kernels = cpu_kernels();
      break;
    case Platform::kCuda:
      kernels = cuda_kernels();
      break;
    case Platform::kOpenCl:
      kernels = opencl_kernels();
      break;
  }
  const std::vector<const LinearKernel*> reference = reference_kernels();
  kernels.insert(kernels.end(), reference.begin(), reference.end());
  return kernels;
}

std::vector<const LinearKernel*> all_kernels() {
  std::vector<const LinearKernel*> kernels;
  for (const auto& list : {cpu_kernels(), cuda_kernels(), opencl_kernels(), reference_kernels()}) {
    kernels.insert(kernels.end(), list.begin(), list.end());
  }
  return kernels;
}

const LinearKernel* find_kernel(std::string_view name) {
  for (const LinearKernel* kernel : all_kernels()) {
    if (kernel->name() == name) return kernel;
  }
  return nullptr;
}

}  // namespace qlinear
