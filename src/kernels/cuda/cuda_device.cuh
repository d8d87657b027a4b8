// Device-side helpers of the CUDA kernels: f32 / bf16 / f16 element loads and stores.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/cuda/launch.h"

namespace qlinear::cuda_device {

// Row t's cache row for position p (launch.h DecoderCache: sequence t / sequence_rows, or the
// first sequence when sequence_rows is 0).
__device__ __forceinline__ int64_t cache_row(const cuda_launch::DecoderCache& c, int64_t t,
                                             int64_t p) {
  return (c.sequence_rows > 0 ? t / c.sequence_rows : 0) * c.capacity + p;
}

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

// Bit for bit core/dtype.cc, NaN payloads included: the decoder's operations are compared
// element by element with the CPU ops, and a NaN (an out-of-range index, a poisoned buffer) must
// travel through a conversion as the host converters carry it. The hardware conversions differ
// only there (they return one canonical NaN), so the kernels above keep using them.
__device__ __forceinline__ float load_exact(const void* p, int64_t i, int code) {
  if (code == cuda_launch::kF32) return static_cast<const float*>(p)[i];
  const uint32_t bits = static_cast<const uint16_t*>(p)[i];
  if (code == cuda_launch::kBF16) return __uint_as_float(bits << 16);
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  const uint32_t man = bits & 0x3FFu;
  if (exp == 0x1F) return __uint_as_float(sign | 0x7F800000u | (man << 13));  // inf, NaN
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in f32
    const float magnitude = static_cast<float>(man) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

__device__ __forceinline__ void store_exact(void* p, int64_t i, float v, int code) {
  if (code == cuda_launch::kF32) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  const uint32_t bits = __float_as_uint(v);
  uint16_t out;
  if (code == cuda_launch::kBF16) {
    // Ties to even by integer rounding; a NaN keeps its sign and high payload, made quiet.
    out = isnan(v) ? static_cast<uint16_t>((bits >> 16) | 0x0040u)
                   : static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
  } else {
    // __float2half_rn rounds to nearest even and overflows to infinity as dtype.cc does; a NaN
    // becomes dtype.cc's canonical one with the sign kept.
    out = isnan(v) ? static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7E00u)
                   : __half_as_ushort(__float2half_rn(v));
  }
  static_cast<uint16_t*>(p)[i] = out;
}

// Chained launches (programmatic dependent launch, sm_90): a kernel started by launch_chained may
// be scheduled while the kernel before it on the stream is still running, so that its launch and
// its prologue (a gemv's first weight loads) hide behind that kernel's tail. Every thread of such a
// kernel calls wait_for_prior_grids() before it reads anything an earlier kernel wrote or writes
// anything an earlier kernel reads; before that it may read only constant data (weights, scales,
// norm weights: written by an upload or a prepare() that synchronised the stream before any
// launch that reads them, never by the kernel just before on the stream).
// The wait returns at once in a launch without the attribute and on GPUs before sm_90.
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next chained kernel's blocks be scheduled once every block of this grid has called it
// (they then sit in their own wait_for_prior_grids until this grid has finished).
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The first statement of a chained kernel that reads nothing constant before its inputs: the next
// kernel may be scheduled at once (it waits in turn), then this one waits for its inputs.
__device__ __forceinline__ void chain_begin() {
  allow_next_grid();
  wait_for_prior_grids();
}

// Whether launch_chained sets the attribute: the current device is sm_90 or newer and
// QLINEAR_CUDA_PDL is not 0 (common.cu; the switch is for A/B measurements).
bool chained_launches();

// kernel<<<grid, block, smem, stream>>>(args...), chained to the kernel before it (see above).
template <typename... Params, typename... Args>
cudaError_t launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                           cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = chained_launches() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// Whether p is 16-byte aligned (cp.async of 16 bytes, vector loads): the attention kernels' fits
// checks.
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline unsigned grid_for(int64_t total, int64_t cap = 65536) {
  const int64_t blocks = (total + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < cap ? blocks : cap));
}

}  // namespace qlinear::cuda_device
