// Device-side helpers of the CUDA kernels: f32 / bf16 / f16 element loads and stores.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace qlinear::cuda_device {

__device__ __forceinline__ float load_element(const void* p, int64_t i, int code) {
  if (code == cuda_launch::kF32) return static_cast<const float*>(p)[i];
  if (code == cuda_launch::kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return __half2float(static_cast<const __half*>(p)[i]);
}

// Round to nearest even, as core/dtype.h's converters do (NaN stays NaN, overflow to infinity).
__device__ __forceinline__ void store_element(void* p, int64_t i, float v, int code) {
  if (code == cuda_launch::kF32) {
    static_cast<float*>(p)[i] = v;
  } else if (code == cuda_launch::kBF16) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  }
}

inline unsigned grid_for(int64_t total, int64_t cap = 65536) {
  const int64_t blocks = (total + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < cap ? blocks : cap));
}

}  // namespace qlinear::cuda_device
