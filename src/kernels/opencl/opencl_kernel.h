// The OpenCL backend's registry entries (Intel GPUs, "xpu", and any OpenCL device through
// CLBlast). In a build without QLINEAR_WITH_OPENCL they still answer selection honestly: a real
// device gets "not-compiled"; a simulated device (--target opencl:intel-gpu) gets each kernel's
// true requirements, so `explain` shows what an OpenCL build would run there. prepare() refuses:
// the device code is not in this binary.
#pragma once

#include <memory>

#include "kernels/backend_kernel.h"

namespace qlinear {

// True when this binary contains the OpenCL host code and kernels.
bool opencl_backend_compiled();

class OpenClKernel : public BackendKernel {
 protected:
  const BackendInfo& backend() const final;
};

// Shared by the Intel GPU kernels: an Intel GPU with fp16 and 16-wide subgroups.
Verdict require_intel_gpu(const Device& device);
// An Intel GPU with cl_intel_subgroups (block reads) and subgroups of `size` lanes.
Verdict require_intel_subgroups(const Device& device, int size);
// An Intel GPU with XMX: cl_intel_subgroup_matrix_multiply_accumulate, fp16, subgroups of 8.
Verdict require_intel_dpas(const Device& device);

}  // namespace qlinear
