// Device: a typed descriptor of where a layer runs, detected on this machine or simulated
// (`--target cpu:avx2`), so `explain` can say what would run on a machine the user lacks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qlinear/status.h"
#include "qlinear/view.h"

namespace qlinear {

enum class Platform { kCpu, kCuda, kOpenCl };
std::string_view platform_name(Platform platform);

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx = false;
};

struct Device {
  Platform platform = Platform::kCpu;
  std::string name;        // "cpu (AMD EPYC ...)", "cuda:0 NVIDIA H200", "simulated cuda:sm90"
  bool simulated = false;  // from --target: selection only, nothing runs
  int index = 0;           // the i of cuda:i / opencl:i (0 for the cpu)
  int cores = 1;           // cpu
  CpuFeatures cpu;         // cpu
  int sm = 0;              // cuda: major*10+minor
  int sm_count = 0;        // cuda
  uint64_t l2_bytes = 0;   // cuda
  double memory_gbps = 0;  // cuda: the memory's peak bandwidth from its clock and bus width
  uint64_t memory_bytes = 0;
  std::string vendor;               // opencl
  bool is_gpu = false;              // opencl
  bool intel_gpu = false;           // opencl: the "xpu" platform
  bool fp16 = false;                // opencl cl_khr_fp16
  std::vector<int> subgroup_sizes;  // opencl: sizes a kernel may require (none: no subgroups)
  bool intel_subgroups = false;     // opencl cl_intel_subgroups (subgroup block reads)
  bool intel_dpas = false;          // opencl cl_intel_subgroup_matrix_multiply_accumulate (XMX)

  // "cpu avx2 fma f16c avx512f avx512_vnni avx512_bf16 (2 cores)"
  std::string describe() const;
};

// Where tensors on this device live: host memory for the cpu, device memory for cuda:i and
// opencl:i.
Location device_location(const Device& device);

// Detects a device of this machine: "cpu", "cuda" / "cuda:N", "opencl" / "opencl:N", "xpu" (the
// OpenCL platform on an Intel GPU). A backend that is not compiled in or has no device is an
// error that says which and why.
Result<Device> detect_device(std::string_view spec);

// A simulated device: cpu:generic | cpu:avx2 | cpu:avx512 | cpu:amx | cuda:smNN | opencl:intel-gpu
// (an Xe-HPG GPU with XMX, Arc A770 class) | opencl:intel-xe-lp (an integrated Xe-LP GPU:
// subgroups, no XMX) | opencl:pocl (no fp16, no subgroups), and "xpu" for opencl:intel-gpu. Unknown
// targets list the accepted ones.
Result<Device> simulate_target(std::string_view target);

}  // namespace qlinear
