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
                "weight group) and run int8 dot products (W4A8/W8A8: avx512_vnni, or AVX2 up to "
                "128 rows): faster decode, "
                "less accurate. Off by default");
}

void add_decoder_flags(CLI::App* cmd, DecoderFlags* flags, DecoderFlagSet set) {
  cmd->add_option("--threads", flags->threads, "CPU threads (0: all cores)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  cmd->add_option("--device", flags->device, "cpu, cuda[:N], opencl[:N] or xpu")
      ->capture_default_str();
  cmd->add_option("--linear-backend", flags->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--kernel", flags->kernel, "Only this kernel may run");
  if (set.quantization) {
    cmd->add_option("--quantization", flags->quantization,
                    "Quantize an unquantized checkpoint online (fp8)")
        ->check(CLI::IsMember({"fp8"}));
  }
  cmd->add_option("--tp", flags->tp, "Tensor-parallel ranks, emulated in this process")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--dtype", flags->dtype,
                  "Activations the linear layers read: f32 or bf16 (auto: bf16 on CUDA, else f32)")
      ->check(CLI::IsMember({"auto", "f32", "bf16"}))
      ->capture_default_str();
  if (set.kv_dtype) {
    cmd->add_option("--kv-dtype", flags->kv_dtype,
                    "KV cache: f32, bf16 or fp8 (e4m3 with a scale per position and kv head); "
                    "auto: bf16 on CUDA, else f32")
        ->check(CLI::IsMember({"auto", "f32", "bf16", "fp8"}))
        ->capture_default_str();
  }
  if (set.int8_activations) add_int8_activations_flag(cmd, &flags->int8_activations);
  cmd->add_flag("--eager", flags->eager,
                "GPU: launch each kernel of a decode step from the host instead of replaying the "
                "step recorded as a CUDA graph");
}

namespace {

// The dtype "auto" stands for on `device` (a --device string): bf16 on cuda[:N], else f32.
std::string resolve_auto_dtype(const std::string& dtype, const std::string& device) {
  if (dtype != "auto") return dtype;
  return device.rfind("cuda", 0) == 0 ? "bf16" : "f32";
}

}  // namespace

Result<DecoderOptions> decoder_options_from_flags(const DecoderFlags& flags) {
  DecoderOptions options;
  QL_ASSIGN_OR_RETURN(options.policy,
                      policy_from_flags(flags.backend, flags.kernel, flags.int8_activations));
  options.quantization = flags.quantization;
  options.tp = flags.tp;
  options.threads = flags.threads;
  const std::string dtype = resolve_auto_dtype(flags.dtype, flags.device);
  const std::string kv_dtype = resolve_auto_dtype(flags.kv_dtype, flags.device);
  options.act_dtype = dtype == "bf16" ? DType::kBF16 : DType::kF32;
  options.kv_dtype = kv_dtype == "bf16"  ? DType::kBF16
                     : kv_dtype == "fp8" ? DType::kF8E4M3
                                         : DType::kF32;
  options.record_decode = !flags.eager;
  return options;
}

}  // namespace qlinear
