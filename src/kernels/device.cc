// Devices: detection on this machine and simulated targets for `--target`.
#include "qlinear/device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/device_context.h"

namespace qlinear {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A plausible part per simulated compute capability: SM count and memory decide nothing in
// selection today, but explain prints them and future cost hints will read them.
struct CudaPart {
  int sm;
  const char* part;
  int sm_count;
  uint64_t memory_gib;
};
constexpr CudaPart kCudaParts[] = {
    {70, "V100", 80, 32},    {75, "T4", 40, 16},         {80, "A100", 108, 80},
    {86, "A10", 72, 24},     {89, "L40S", 142, 48},      {90, "H200", 132, 141},
    {100, "B200", 148, 180}, {120, "RTX 5090", 170, 32},
};

constexpr const char* kAcceptedTargets =
    "cpu:generic, cpu:avx2, cpu:avx512, cpu:amx, cuda:smNN (sm70, sm75, sm80, sm86, sm89, sm90, "
    "sm100, "
    "sm120), opencl:intel-gpu, opencl:intel-xe-lp, opencl:pocl, xpu";

std::string cuda_parts_list() {
  std::string list;
  for (const CudaPart& part : kCudaParts) {
    if (!list.empty()) list += ", ";
    list += fmt::format("sm{}", part.sm);
  }
  return list;
}

// Parses the digits after `prefix` ("cuda:" + "3"); -1 when malformed.
int parse_index(std::string_view digits) {
  int value = -1;
  const auto* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ec != std::errc() || ptr != end || value < 0) return -1;
  return value;
}

Device simulated_cpu(std::string_view target) {
  Device device;
  device.platform = Platform::kCpu;
  device.name = fmt::format("simulated {}", target);
  device.simulated = true;
  device.cores = 8;
  return device;
}

// An Intel GPU as its OpenCL runtime reports it: Xe-HPG (Arc A770 class, XMX) or, with
// `xmx` false, an integrated Xe-LP (Tiger Lake class: subgroups and fp16, no DPAS).
Device simulated_intel_gpu(std::string_view target, bool xmx) {
  Device device;
  device.platform = Platform::kOpenCl;
  device.name = fmt::format("simulated {}", target);
  device.simulated = true;
  device.vendor = "Intel";
  device.is_gpu = true;
  device.intel_gpu = true;
  device.fp16 = true;
  device.subgroup_sizes = {8, 16, 32};
  device.intel_subgroups = true;
  device.intel_dpas = xmx;
  device.memory_bytes = (xmx ? 16 : 8) * kGiB;
  return device;
}

}  // namespace

std::string_view platform_name(Platform platform) {
  switch (platform) {
    case Platform::kCpu:
      return "cpu";
    case Platform::kCuda:
      return "cuda";
    case Platform::kOpenCl:
      return "opencl";
  }
  return "unknown";
}

std::string Device::describe() const {
  std::string text = simulated ? "simulated " : "";
  text += platform_name(platform);
  switch (platform) {
    case Platform::kCpu: {
      const std::pair<bool, const char*> flags[] = {{cpu.avx2, "avx2"},
                                                    {cpu.fma, "fma"},
                                                    {cpu.f16c, "f16c"},
                                                    {cpu.avx512f, "avx512f"},
                                                    {cpu.avx512bw, "avx512bw"},
                                                    {cpu.avx512vl, "avx512vl"},
                                                    {cpu.avx512_vnni, "avx512_vnni"},
                                                    {cpu.avx512_bf16, "avx512_bf16"},
                                                    {cpu.amx, "amx"}};
      bool any = false;
      for (const auto& [on, flag] : flags) {
        if (!on) continue;
        text += fmt::format(" {}", flag);
        any = true;
      }
      if (!any) text += " generic";
      text += fmt::format(" ({} {})", cores, cores == 1 ? "core" : "cores");
      break;
    }
    case Platform::kCuda:
      text += fmt::format(" sm{} ({} SMs, {} GiB", sm, sm_count, memory_bytes / kGiB);
      if (l2_bytes > 0) text += fmt::format(", {} MiB L2", l2_bytes >> 20);
      if (memory_gbps > 0) text += fmt::format(", {:.0f} GB/s", memory_gbps);
      text += ")";
      break;
    case Platform::kOpenCl: {
      text += fmt::format(" {} {}", vendor, is_gpu ? "gpu" : "cpu-device");
      if (fp16) text += " fp16";
      if (!subgroup_sizes.empty())
        text += fmt::format(" subgroups {}", fmt::join(subgroup_sizes, ","));
      if (intel_subgroups) text += " block-reads";
      if (intel_dpas) text += " dpas";
      if (memory_bytes > 0) text += fmt::format(" ({} GiB)", memory_bytes / kGiB);
      break;
    }
  }
  return text;
}

Result<Device> detect_device(std::string_view spec) {
  if (spec == "cpu") {
    Device device;
    device.platform = Platform::kCpu;
    const std::string model = detect_cpu_model();
    device.name = model.empty() ? "cpu" : fmt::format("cpu ({})", model);
    device.cores = detect_cpu_cores();
    device.cpu = detect_cpu_features();
    return device;
  }
  if (spec == "cuda" || spec.starts_with("cuda:")) {
    const int index = spec == "cuda" ? 0 : parse_index(spec.substr(5));
    if (index >= 0) return detect_cuda_device(index);
  }
  if (spec == "opencl" || spec.starts_with("opencl:")) {
    const int index = spec == "opencl" ? 0 : parse_index(spec.substr(7));
    if (index >= 0) return detect_opencl_device(index, /*intel_gpu_only=*/false);
  }
  if (spec == "xpu") return detect_opencl_device(0, /*intel_gpu_only=*/true);
  return make_error(
      ErrorCode::kInvalidArgument,
      "device \"{}\" is not a device name; expected one of cpu, cuda, cuda:N, opencl, "
      "opencl:N, xpu",
      spec);
}

Result<Device> simulate_target(std::string_view target) {
  if (target == "cpu:generic") return simulated_cpu(target);
  if (target == "cpu:avx2" || target == "cpu:avx512" || target == "cpu:amx") {
    Device device = simulated_cpu(target);
    device.cpu.avx2 = device.cpu.fma = device.cpu.f16c = true;
    if (target != "cpu:avx2") {
      device.cpu.avx512f = device.cpu.avx512bw = device.cpu.avx512vl = true;
      device.cpu.avx512_vnni = device.cpu.avx512_bf16 = true;
    }
    // cpu:amx: a Sapphire Rapids class Xeon (AVX-512 plus AMX tiles, permitted by the OS).
    device.cpu.amx = target == "cpu:amx";
    return device;
  }
  if (target.starts_with("cuda:sm")) {
    const int sm = parse_index(target.substr(7));
    for (const CudaPart& part : kCudaParts) {
      if (part.sm != sm) continue;
      Device device;
      device.platform = Platform::kCuda;
      device.name = fmt::format("simulated {} ({})", target, part.part);
      device.simulated = true;
      device.sm = part.sm;
      device.sm_count = part.sm_count;
      device.memory_bytes = part.memory_gib * kGiB;
      return device;
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "--target \"{}\": unknown CUDA compute capability; accepted: {}", target,
                      cuda_parts_list());
  }
  if (target == "opencl:intel-gpu" || target == "xpu") return simulated_intel_gpu(target, true);
  if (target == "opencl:intel-xe-lp") return simulated_intel_gpu(target, false);
  if (target == "opencl:pocl") {
    Device device;
    device.platform = Platform::kOpenCl;
    device.name = "simulated opencl:pocl";
    device.simulated = true;
    device.vendor = "pocl";
    device.is_gpu = false;
    device.memory_bytes = 8 * kGiB;
    return device;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "--target \"{}\" is not a known target; accepted: {}", target,
                    kAcceptedTargets);
}

}  // namespace qlinear
