#include "cli/kernel_flags.h"

#include <cstdlib>

namespace qlinear {

Result<Device> device_from_flags(const std::string& device, const std::string& target) {
  if (!target.empty()) return simulate_target(target);
  Result<Device> detected = detect_device(device);
  if (!detected.ok() && device == "xpu") {
    // "xpu" is the OpenCL platform on an Intel GPU: say so, and offer its simulation.
    return make_error(detected.status().code(),
                      "--device xpu (the OpenCL platform on an Intel GPU): the OpenCL backend is "
                      "not compiled into this qlinear (build with the opencl preset); use "
                      "--target xpu to see what would run there");
  }
  return detected;
}

Result<SelectionPolicy> policy_from_flags(const std::string& backend, const std::string& kernel,
                                          bool int8_activations) {
  const char* disabled = std::getenv("QLINEAR_DISABLED_KERNELS");
  QL_ASSIGN_OR_RETURN(SelectionPolicy policy,
                      make_policy(backend, kernel, disabled != nullptr ? disabled : ""));
  policy.int8_activations = int8_activations;
  return policy;
}

void add_int8_activations_flag(CLI::App* cmd, bool* value) {
  cmd->add_flag("--int8-activations", *value,
                "Integer-weight layers quantize activations to int8 (symmetric, per row and "
                "weight group) and run int8 dot products (W4A8/W8A8, avx512_vnni): faster decode, "
                "less accurate. Off by default");
}

}  // namespace qlinear
