// The kernel-selection flags `explain`, `layer` and `bench` share: --device / --target into a
// Device, and --linear-backend / --kernel / --int8-activations / QLINEAR_DISABLED_KERNELS into a
// SelectionPolicy.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/status.h"
#include "kernels/select.h"
#include "qlinear/device.h"

namespace qlinear {

// --target (simulated) when given, else the detected --device. A backend this build lacks is an
// error naming it; "xpu" also names the simulated target that stands in for it.
Result<Device> device_from_flags(const std::string& device, const std::string& target);

// make_policy() with QLINEAR_DISABLED_KERNELS read from the environment, and --int8-activations.
Result<SelectionPolicy> policy_from_flags(const std::string& backend, const std::string& kernel,
                                          bool int8_activations);

// --int8-activations, with the same help text on every command that has it.
void add_int8_activations_flag(CLI::App* cmd, bool* value);

}  // namespace qlinear
