// The shared base of registry entries for an optional GPU backend (CUDA, OpenCL). In a build
// without that backend they still answer selection honestly: a real device gets "not-compiled";
// a simulated device (--target) gets each kernel's true requirements, so `explain` shows what a
// build with the backend would run there. prepare() refuses: the device code is not in this binary.
#pragma once

#include <memory>
#include <string_view>

#include "kernels/kernel.h"

namespace qlinear {

struct BackendInfo {
  Platform platform;
  bool compiled;            // this binary contains the backend's device code
  std::string_view label;   // "CUDA"
  std::string_view option;  // "QLINEAR_WITH_CUDA"
  std::string_view preset;  // "cuda"
};

class BackendKernel : public LinearKernel {
 public:
  Platform platform() const final { return backend().platform; }
  Verdict check(const LinearProblem& problem, const Device& device) const final;
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& device) const final;

 protected:
  virtual const BackendInfo& backend() const = 0;
  // The kernel's own requirements (capability, device features, scheme, shapes), in order.
  virtual Verdict requirements(const LinearProblem& problem, const Device& device) const = 0;
};

}  // namespace qlinear
