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
  if (!device.simulated) {
    if (!info.compiled) {
      return Verdict::reject(Reason::kNotCompiled, fmt::format("built without {}", info.option));
    }
    if (!has_device_code()) {
      return Verdict::reject(Reason::kNotCompiled,
                             fmt::format("no device code for {} in this build (planned)", name()));
    }
  }
  if (problem.scheme == WeightScheme::kInt && problem.int8_activations) {
    return Verdict::reject(Reason::kActivationQuant,
                           "int8 activations (--int8-activations) run on CPU kernels only");
  }
  return requirements(problem, device);
}

Result<std::unique_ptr<PreparedLinear>> BackendKernel::prepare(const Canonical& weights,
                                                               const LinearProblem& problem,
                                                               DeviceContext& device) const {
  const Device& d = device.device();
  if (d.simulated) {
    return make_error(
        ErrorCode::kUnsupported,
        "{}: layer \"{}\": device \"{}\" is simulated; kernels can be selected for it "
        "but not run",
        name(), weights.name, d.name);
  }
  const BackendInfo& info = backend();
  if (!info.compiled) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: layer \"{}\": {} backend not compiled into this qlinear (built without "
                      "{}; build with the {} preset)",
                      name(), weights.name, info.label, info.option, info.preset);
  }
  // An entry without device code says so (unsupported), before its requirements are checked.
  if (!has_device_code()) return BackendKernel::prepare_on_device(weights, problem, device);
  if (Verdict v = check(problem, d); !v.ok()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: layer \"{}\": {} ({})", name(),
                      weights.name, v.to_string(), problem.to_string());
  }
  return prepare_on_device(weights, problem, device);
}

Result<std::unique_ptr<PreparedLinear>> BackendKernel::prepare_on_device(
    const Canonical& weights, const LinearProblem& /*problem*/, DeviceContext& /*device*/) const {
  return make_error(ErrorCode::kUnsupported,
                    "{}: layer \"{}\": no device code for this kernel in this build", name(),
                    weights.name);
}

}  // namespace qlinear
