// The kernel-selection flags `explain`, `layer` and `bench` share: --device / --target into a
// Device, and --linear-backend / --kernel / --int8-activations / QLINEAR_DISABLED_KERNELS into a
// SelectionPolicy; and the decoder flags of `generate`, `perplexity` and `bench-model`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/status.h"
#include "kernels/select.h"
#include "model/decoder.h"
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

// The flags of every command that runs a decoder, with one spelling, range and help text.
// Defaults are per command (the caller sets them before add_decoder_flags).
struct DecoderFlags {
  std::string device = "cpu";
  std::string backend = "auto";
  std::string kernel;
  std::string quantization;  // "" or "fp8"
  int threads = 0;
  int tp = 1;
  // Activations the linear layers read, and the KV cache: "auto" is bf16 on a CUDA device (what
  // its fast kernels take, and what GPU engines run bf16 checkpoints in) and f32 elsewhere
  // (transformers' numerics on the CPU).
  std::string dtype = "auto";
  std::string kv_dtype = "auto";
  bool eager = false;             // launch every kernel of a GPU decode step from the host
  bool int8_activations = false;  // --int8-activations
};

// Which of the optional decoder flags a command offers.
struct DecoderFlagSet {
  bool quantization = true;      // --quantization fp8
  bool kv_dtype = true;          // --kv-dtype
  bool int8_activations = true;  // --int8-activations
};

void add_decoder_flags(CLI::App* cmd, DecoderFlags* flags, DecoderFlagSet set = {});

// The DecoderOptions the flags ask for (policy from --linear-backend / --kernel,
// --int8-activations and QLINEAR_DISABLED_KERNELS); progress is the command's to set.
Result<DecoderOptions> decoder_options_from_flags(const DecoderFlags& flags);

}  // namespace qlinear
