#include "kernels/backend_kernel.h"

#include <fmt/format.h>

namespace qlinear {

Verdict BackendKernel::check(const LinearProblem& problem, const Device& device) const {
  const BackendInfo& info = backend();
  if (device.platform != info.platform) {
    return Verdict::reject(Reason::kWrongPlatform,
                           fmt::format("runs on {}, device is {}", platform_name(info.platform),
                                       platform_name(device.platform)));
  }
  if (!info.compiled && !device.simulated) {
    return Verdict::reject(Reason::kNotCompiled, fmt::format("built without {}", info.option));
  }
  if (problem.scheme == WeightScheme::kInt && problem.int8_activations) {
    return Verdict::reject(Reason::kActivationQuant,
                           "int8 activations (--int8-activations) run on CPU kernels only");
  }
  return requirements(problem, device);
}

Result<std::unique_ptr<PreparedLinear>> BackendKernel::prepare(const Canonical& weights,
                                                               const LinearProblem& /*problem*/,
                                                               const Device& device) const {
  if (device.simulated) {
    return make_error(
        ErrorCode::kUnsupported,
        "{}: layer \"{}\": device \"{}\" is simulated; kernels can be selected for it "
        "but not run",
        name(), weights.name, device.name);
  }
  const BackendInfo& info = backend();
  return make_error(ErrorCode::kUnsupported,
                    "{}: layer \"{}\": {} backend not compiled into this qlinear (built without "
                    "{}; build with the {} preset)",
                    name(), weights.name, info.label, info.option, info.preset);
}

}  // namespace qlinear
