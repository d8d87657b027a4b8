#include "kernels/opencl/opencl_kernel.h"

#include <fmt/format.h>

#include <algorithm>

namespace qlinear {

bool opencl_backend_compiled() {
#if defined(QLINEAR_WITH_OPENCL)
  return true;
#else
  return false;
#endif
}

Verdict OpenClKernel::check(const LinearProblem& problem, const Device& device) const {
  if (device.platform != Platform::kOpenCl) {
    return Verdict::reject(Reason::kWrongPlatform, fmt::format("runs on opencl, device is {}",
                                                               platform_name(device.platform)));
  }
  if (!opencl_backend_compiled() && !device.simulated) {
    return Verdict::reject(Reason::kNotCompiled, "built without QLINEAR_WITH_OPENCL");
  }
  return requirements(problem, device);
}

Result<std::unique_ptr<PreparedLinear>> OpenClKernel::prepare(const Canonical& weights,
                                                              const LinearProblem& /*problem*/,
                                                              const Device& device) const {
  if (device.simulated) {
    return make_error(
        ErrorCode::kUnsupported,
        "{}: layer \"{}\": device \"{}\" is simulated; kernels can be selected for it "
        "but not run",
        name(), weights.name, device.name);
  }
  return make_error(ErrorCode::kUnsupported,
                    "{}: layer \"{}\": OpenCL backend not compiled into this qlinear (built "
                    "without QLINEAR_WITH_OPENCL; build with the opencl preset)",
                    name(), weights.name);
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

}  // namespace qlinear
