#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/cuda_kernel.h"
#include "kernels/opencl/opencl_kernel.h"
#include "qlinear/device.h"

namespace qlinear {
namespace {

TEST(DeviceTest, DetectCpuMatchesCompilerBuiltins) {
  auto device = detect_device("cpu");
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  EXPECT_EQ(device->platform, Platform::kCpu);
  EXPECT_FALSE(device->simulated);
  EXPECT_GE(device->cores, 1);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  EXPECT_EQ(device->cpu.avx2, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(device->cpu.fma, __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ(device->cpu.f16c, __builtin_cpu_supports("f16c") != 0);
  EXPECT_EQ(device->cpu.avx512f, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(device->cpu.avx512bw, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(device->cpu.avx512vl, __builtin_cpu_supports("avx512vl") != 0);
  EXPECT_EQ(device->cpu.avx512_vnni, __builtin_cpu_supports("avx512vnni") != 0);
  EXPECT_EQ(device->cpu.avx512_bf16, __builtin_cpu_supports("avx512bf16") != 0);
#endif
  // describe() names exactly the features that are set.
  const std::string text = device->describe();
  EXPECT_EQ(text.find(" avx2") != std::string::npos, device->cpu.avx2) << text;
  EXPECT_EQ(text.find(" avx512_vnni") != std::string::npos, device->cpu.avx512_vnni) << text;
}

// Without the backend a GPU device is an error that suggests --target; with it (a CUDA or OpenCL
// build, as on a developer's machine) the device either exists or the error names the runtime.
TEST(DeviceTest, UnbuiltBackendsAreErrorsThatSuggestSimulation) {
  for (const char* spec : {"cuda", "cuda:1"}) {
    auto device = detect_device(spec);
    if (cuda_backend_compiled()) {
      if (device.ok()) {
        EXPECT_EQ(device->platform, Platform::kCuda) << spec;
      } else {
        EXPECT_EQ(device.status().message().find("CUDA backend not compiled"), std::string::npos);
      }
      continue;
    }
    ASSERT_FALSE(device.ok());
    EXPECT_EQ(device.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(device.status().message().find("CUDA backend not compiled"), std::string::npos);
    EXPECT_NE(device.status().message().find("--target cuda:sm90"), std::string::npos);
  }
  for (const char* spec : {"opencl", "opencl:0", "xpu"}) {
    auto device = detect_device(spec);
    if (opencl_backend_compiled()) {
      if (device.ok()) {
        EXPECT_EQ(device->platform, Platform::kOpenCl) << spec;
      } else {
        EXPECT_EQ(device.status().message().find("OpenCL backend not compiled"), std::string::npos);
      }
      continue;
    }
    ASSERT_FALSE(device.ok());
    EXPECT_EQ(device.status().code(), ErrorCode::kUnsupported) << spec;
    EXPECT_NE(device.status().message().find("OpenCL backend not compiled"), std::string::npos);
  }
  auto bad = detect_device("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"tpu\""), std::string::npos);
  EXPECT_FALSE(detect_device("cuda:x").ok());
}

// With the OpenCL backend: opencl:N past the last device names how many there are, and "xpu"
// is the first Intel GPU or an error saying there is none (PoCL in CI is a CPU device).
TEST(DeviceTest, OpenClDevicesAreFoundOrNamed) {
  if (!opencl_backend_compiled()) GTEST_SKIP() << "built without QLINEAR_WITH_OPENCL";
  auto first = detect_device("opencl");
  if (!first.ok()) {
    EXPECT_EQ(first.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(first.status().message().find("OpenCL"), std::string::npos);
    GTEST_SKIP() << "no OpenCL device: " << first.status().to_string();
  }
  EXPECT_EQ(first->platform, Platform::kOpenCl);
  EXPECT_FALSE(first->simulated);
  EXPECT_EQ(first->index, 0);
  EXPECT_EQ(first->name.rfind("opencl:0 ", 0), 0u) << first->name;
  auto past = detect_device("opencl:99");
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(past.status().message().find("\"opencl:99\""), std::string::npos);
  EXPECT_NE(past.status().message().find("opencl:0.."), std::string::npos);
  auto xpu = detect_device("xpu");
  if (xpu.ok()) {
    EXPECT_TRUE(xpu->intel_gpu && xpu->is_gpu);
  } else {
    EXPECT_EQ(xpu.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(xpu.status().message().find("no Intel GPU"), std::string::npos);
    EXPECT_NE(xpu.status().message().find(first->name), std::string::npos);
  }
}

TEST(DeviceTest, SimulatedCpuTargets) {
  auto generic = simulate_target("cpu:generic");
  ASSERT_TRUE(generic.ok());
  EXPECT_TRUE(generic->simulated);
  EXPECT_EQ(generic->platform, Platform::kCpu);
  EXPECT_FALSE(generic->cpu.avx2 || generic->cpu.fma || generic->cpu.f16c || generic->cpu.avx512f);

  auto avx2 = simulate_target("cpu:avx2");
  ASSERT_TRUE(avx2.ok());
  EXPECT_TRUE(avx2->cpu.avx2 && avx2->cpu.fma && avx2->cpu.f16c);
  EXPECT_FALSE(avx2->cpu.avx512f || avx2->cpu.avx512_vnni || avx2->cpu.amx);

  auto avx512 = simulate_target("cpu:avx512");
  ASSERT_TRUE(avx512.ok());
  EXPECT_TRUE(avx512->cpu.avx2 && avx512->cpu.avx512f && avx512->cpu.avx512bw &&
              avx512->cpu.avx512vl && avx512->cpu.avx512_vnni && avx512->cpu.avx512_bf16);
  EXPECT_FALSE(avx512->cpu.amx);
  EXPECT_EQ(avx512->describe().find("simulated cpu avx2 fma f16c avx512f"), 0u)
      << avx512->describe();

  auto amx = simulate_target("cpu:amx");
  ASSERT_TRUE(amx.ok());
  EXPECT_TRUE(amx->cpu.avx512f && amx->cpu.avx512_bf16 && amx->cpu.amx);
  EXPECT_NE(amx->describe().find("avx512_bf16 amx"), std::string::npos) << amx->describe();
}

TEST(DeviceTest, SimulatedCudaTargets) {
  for (int sm : {70, 75, 80, 86, 89, 90, 100, 120}) {
    auto device = simulate_target("cuda:sm" + std::to_string(sm));
    ASSERT_TRUE(device.ok()) << sm;
    EXPECT_EQ(device->platform, Platform::kCuda);
    EXPECT_TRUE(device->simulated);
    EXPECT_EQ(device->sm, sm);
    EXPECT_GT(device->sm_count, 0);
    EXPECT_GT(device->memory_bytes, 0u);
  }
  auto unknown = simulate_target("cuda:sm42");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("sm90"), std::string::npos);
  EXPECT_FALSE(simulate_target("cuda:smx").ok());
}

TEST(DeviceTest, SimulatedOpenClTargets) {
  for (const char* target : {"opencl:intel-gpu", "xpu"}) {
    auto device = simulate_target(target);
    ASSERT_TRUE(device.ok()) << target;
    EXPECT_EQ(device->platform, Platform::kOpenCl);
    EXPECT_TRUE(device->simulated);
    EXPECT_EQ(device->vendor, "Intel");
    EXPECT_TRUE(device->is_gpu && device->intel_gpu && device->fp16);
    EXPECT_EQ(device->subgroup_sizes, (std::vector<int>{8, 16, 32}));
    EXPECT_TRUE(device->intel_subgroups && device->intel_dpas) << target;
  }
  // An integrated Xe-LP GPU: subgroups and block reads, no XMX (DPAS).
  auto xe_lp = simulate_target("opencl:intel-xe-lp");
  ASSERT_TRUE(xe_lp.ok());
  EXPECT_TRUE(xe_lp->intel_gpu && xe_lp->fp16 && xe_lp->intel_subgroups);
  EXPECT_FALSE(xe_lp->intel_dpas);
  auto pocl = simulate_target("opencl:pocl");
  ASSERT_TRUE(pocl.ok());
  EXPECT_EQ(pocl->platform, Platform::kOpenCl);
  EXPECT_FALSE(pocl->is_gpu || pocl->intel_gpu || pocl->fp16);
  EXPECT_TRUE(pocl->subgroup_sizes.empty());
  EXPECT_FALSE(pocl->intel_subgroups || pocl->intel_dpas);
}

TEST(DeviceTest, UnknownTargetListsTheAcceptedOnes) {
  auto device = simulate_target("cpu:sse2");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), ErrorCode::kInvalidArgument);
  for (const char* accepted : {"cpu:generic", "cpu:avx2", "cpu:avx512", "cpu:amx", "cuda:smNN",
                               "opencl:intel-gpu", "opencl:intel-xe-lp", "opencl:pocl", "xpu"}) {
    EXPECT_NE(device.status().message().find(accepted), std::string::npos) << accepted;
  }
}

TEST(DeviceTest, PlatformNames) {
  EXPECT_EQ(platform_name(Platform::kCpu), "cpu");
  EXPECT_EQ(platform_name(Platform::kCuda), "cuda");
  EXPECT_EQ(platform_name(Platform::kOpenCl), "opencl");
}

}  // namespace
}  // namespace qlinear
