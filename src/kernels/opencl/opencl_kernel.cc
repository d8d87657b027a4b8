#include "kernels/opencl/opencl_kernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/common/requirements.h"

namespace qlinear {

bool opencl_backend_compiled() {
#if defined(QLINEAR_WITH_OPENCL)
  return true;
#else
  return false;
#endif
}

const BackendInfo& OpenClKernel::backend() const {
  static const BackendInfo kInfo{Platform::kOpenCl, opencl_backend_compiled(), "OpenCL",
                                 "QLINEAR_WITH_OPENCL", "opencl"};
  return kInfo;
}

Verdict require_intel_gpu(const Device& device) {
  if (!device.intel_gpu) {
    return Verdict::reject(Reason::kCapability,
                           fmt::format("needs an Intel GPU, device is {} {}", device.vendor,
                                       device.is_gpu ? "gpu" : "cpu-device"));
  }
  if (!device.fp16) return Verdict::reject(Reason::kCapability, "needs cl_khr_fp16");
  const auto& sizes = device.subgroup_sizes;
  if (std::find(sizes.begin(), sizes.end(), 16) == sizes.end()) {
    return Verdict::reject(Reason::kCapability, "needs subgroup size 16");
  }
  return Verdict::accept();
}

Verdict require_intel_subgroups(const Device& device, int size) {
  if (!device.intel_gpu) {
    return Verdict::reject(Reason::kCapability,
                           fmt::format("needs an Intel GPU, device is {} {}", device.vendor,
                                       device.is_gpu ? "gpu" : "cpu-device"));
  }
  if (!device.intel_subgroups) {
    return Verdict::reject(Reason::kCapability, "needs cl_intel_subgroups (block reads)");
  }
  const auto& sizes = device.subgroup_sizes;
  if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
    return Verdict::reject(Reason::kCapability, fmt::format("needs subgroup size {}", size));
  }
  return Verdict::accept();
}

Verdict require_intel_dpas(const Device& device) {
  QL_REQUIRE(require_intel_subgroups(device, 8));
  if (!device.fp16) return Verdict::reject(Reason::kCapability, "needs cl_khr_fp16");
  if (!device.intel_dpas) {
    return Verdict::reject(Reason::kCapability,
                           "needs cl_intel_subgroup_matrix_multiply_accumulate (XMX)");
  }
  return Verdict::accept();
}

}  // namespace qlinear
