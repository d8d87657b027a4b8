// The shared base of registry entries for an optional GPU backend (CUDA, OpenCL). Every entry is
// listed in every build and answers selection honestly:
//   - a real device, backend not compiled in: not-compiled ("built without QLINEAR_WITH_CUDA");
//   - a real device, backend compiled but this entry has no device code yet: not-compiled
//     ("no device code for <kernel> in this build"), so list order can never pick a stub;
//   - a simulated device (--target): the kernel's true requirements, so `explain` shows what a
//     build with the backend would run there.
// An entry with device code overrides has_device_code() and prepare_on_device() (in the
// backend's device-code files, compiled only with the backend).
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
                                                  DeviceContext& device) const final;

 protected:
  virtual const BackendInfo& backend() const = 0;
  // The kernel's own requirements (capability, device features, scheme, shapes), in order.
  virtual Verdict requirements(const LinearProblem& problem, const Device& device) const = 0;
  // True for entries whose device code is in this binary.
  virtual bool has_device_code() const { return false; }
  // Repacks and uploads `weights` (check() accepted `problem` on device.device(), a real device).
  virtual Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                                    const LinearProblem& problem,
                                                                    DeviceContext& device) const;
};

}  // namespace qlinear
