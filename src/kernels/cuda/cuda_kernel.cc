#include "kernels/cuda/cuda_kernel.h"

#include <fmt/format.h>

namespace qlinear {

bool cuda_backend_compiled() {
#if defined(QLINEAR_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

Verdict CudaKernel::check(const LinearProblem& problem, const Device& device) const {
  if (device.platform != Platform::kCuda) {
    return Verdict::reject(Reason::kWrongPlatform, fmt::format("runs on cuda, device is {}",
                                                               platform_name(device.platform)));
  }
  if (!cuda_backend_compiled() && !device.simulated) {
    return Verdict::reject(Reason::kNotCompiled, "built without QLINEAR_WITH_CUDA");
  }
  return requirements(problem, device);
}

Result<std::unique_ptr<PreparedLinear>> CudaKernel::prepare(const Canonical& weights,
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
                    "{}: layer \"{}\": CUDA backend not compiled into this qlinear (built without "
                    "QLINEAR_WITH_CUDA; build with the cuda preset)",
                    name(), weights.name);
}

}  // namespace qlinear
