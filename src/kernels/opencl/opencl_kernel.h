// The OpenCL backend's registry entries (Intel GPUs, "xpu", and any OpenCL device through
// CLBlast). In a build without QLINEAR_WITH_OPENCL they still answer selection honestly: a real
// device gets "not-compiled"; a simulated device (--target opencl:intel-gpu) gets each kernel's
// true requirements, so `explain` shows what an OpenCL build would run there. prepare() refuses:
// the device code is not in this binary.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace qlinear {

// True when this binary contains the OpenCL host code and kernels.
bool opencl_backend_compiled();

class OpenClKernel : public LinearKernel {
 public:
  Platform platform() const final { return Platform::kOpenCl; }
  Verdict check(const LinearProblem& problem, const Device& device) const final;
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& device) const final;

 protected:
  // The kernel's own requirements (device features, scheme, shapes), checked in order.
  virtual Verdict requirements(const LinearProblem& problem, const Device& device) const = 0;
};

// Shared by the Intel GPU kernels: an Intel GPU with fp16 and 16-wide subgroups.
Verdict require_intel_gpu(const Device& device);

}  // namespace qlinear
