// The GPU the device tests run on (cuda_kernels_test.cc, cuda_norm_fusion_test.cc): the first
// CUDA device and its context, or nullopt where the CUDA runtime finds none (the tests skip: CI).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <optional>

#include "kernels/device_context.h"
#include "qlinear/device.h"

namespace qlinear::test {

struct Gpu {
  Device device;
  DeviceContext* context = nullptr;
};

inline const std::optional<Gpu>& gpu() {
  static const std::optional<Gpu> g = []() -> std::optional<Gpu> {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
    Result<Device> d = detect_device("cuda:0");
    if (!d.ok()) return std::nullopt;
    Result<DeviceContext*> ctx = device_context(*d);
    if (!ctx.ok()) return std::nullopt;
    return Gpu{*d, *ctx};
  }();
  return g;
}

}  // namespace qlinear::test

#define REQUIRE_GPU()                                                                            \
  do {                                                                                           \
    if (!::qlinear::test::gpu()) GTEST_SKIP() << "no CUDA GPU (cudaGetDeviceCount failed or 0)"; \
  } while (0)
