// The CUDA backend's registry entries. In a build without QLINEAR_WITH_CUDA they still answer
// selection honestly: a real device gets "not-compiled"; a simulated device (--target cuda:smNN)
// gets each kernel's true requirements, so `explain` shows what a CUDA build would run there.
// prepare() refuses: the device code is not in this binary.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace qlinear {

// True when this binary contains the CUDA device code.
bool cuda_backend_compiled();

class CudaKernel : public LinearKernel {
 public:
  Platform platform() const final { return Platform::kCuda; }
  Verdict check(const LinearProblem& problem, const Device& device) const final;
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& device) const final;

 protected:
  // The kernel's own requirements (capability, scheme, shapes), checked in order.
  virtual Verdict requirements(const LinearProblem& problem, const Device& device) const = 0;
};

}  // namespace qlinear
