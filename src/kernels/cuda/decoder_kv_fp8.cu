// The FP8 KV cache's store (model/kv_fp8.h): each key and value head of a row becomes head_dim
// e4m3 codes and one f32 scale, max(amax / 448, 1 / (448 * 512)), codes RNE(clamp(x / scale)) by
// IEEE division: bit for bit the CPU ops' kv_fp8::quantize_head. A head is one warp's: its lanes
// hold the pairs (i, i + head_dim / 2), i = lane + 32 r (RoPE's pairs, so the fused form rotates
// k in registers before it quantizes), and the head's amax is one butterfly of fmaxf (NaN
// ignored, as std::fmax on the host).
//
// decoder_store_kv_fp8: warps over (row, kv head, k or v). decoder_rope_store_kv_fp8: warps over
// (row, q head or kv head); a q head's warp rotates it in place, a kv head's warp rotates its k
// head in place, stores it and stores its v head: one launch, as decoder_rope_store_kv.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/rope_pair.cuh"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::cache_row;
using cuda_device::load_exact;
using cuda_device::rotate_pair;

constexpr int kWarps = 8;  // per block
constexpr int kMaxPairsPerLane = kDecoderMaxHeadDim / 2 / 32;
constexpr float kMax = 448.0f;

__device__ __forceinline__ uint8_t encode(float v) {
  v = v < -kMax ? -kMax : (v > kMax ? kMax : v);  // NaN passes, as std::clamp
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

// A float row's element address (f32 / bf16 / f16 rows).
__device__ __forceinline__ const void* float_row(DecoderMatrix m, int64_t row) {
  return static_cast<const char*>(m.data) + row * m.ld * (m.code == kF32 ? 4 : 2);
}

// One head held as pairs a[r] = x[i], b[r] = x[i + half] (i = lane + 32 r < half) into `codes`
// (the head's first byte) and *scale.
__device__ __forceinline__ void store_head(const float (&a)[kMaxPairsPerLane],
                                           const float (&b)[kMaxPairsPerLane], int64_t half,
                                           int lane, uint8_t* codes, float* scale) {
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < kMaxPairsPerLane; ++r) {
    if (lane + 32 * r < half) amax = fmaxf(amax, fmaxf(fabsf(a[r]), fabsf(b[r])));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
  const float s = fmaxf(__fdiv_rn(amax, kMax), kFp8ActScaleFloor);
#pragma unroll
  for (int r = 0; r < kMaxPairsPerLane; ++r) {
    const int64_t i = lane + 32 * r;
    if (i < half) {
      codes[i] = encode(__fdiv_rn(a[r], s));
      codes[i + half] = encode(__fdiv_rn(b[r], s));
    }
  }
  if (lane == 0) *scale = s;
}

// Head h of row t of a float matrix as pairs.
__device__ __forceinline__ void load_head(DecoderMatrix m, int64_t t, int64_t h, int64_t half,
                                          int lane, float (&a)[kMaxPairsPerLane],
                                          float (&b)[kMaxPairsPerLane]) {
  const void* row = float_row(m, t);
#pragma unroll
  for (int r = 0; r < kMaxPairsPerLane; ++r) {
    const int64_t i = lane + 32 * r;
    a[r] = i < half ? load_exact(row, h * 2 * half + i, m.code) : 0.0f;
    b[r] = i < half ? load_exact(row, h * 2 * half + i + half, m.code) : 0.0f;
  }
}

// Head h of a cache (k or v) at cache row `row`: its codes and its scale's address.
__device__ __forceinline__ uint8_t* head_codes(DecoderMatrix cache, int64_t row, int64_t h,
                                               int64_t head_dim) {
  return static_cast<uint8_t*>(cache.data) + row * cache.ld + h * head_dim;
}

__global__ void __launch_bounds__(kWarps * 32)
    store_kv_fp8_kernel(DecoderMatrix k, DecoderMatrix v, const int32_t* positions, int64_t T,
                        int64_t kv_heads, int64_t half, DecoderCache cache) {
  cuda_device::chain_begin();
  const int64_t warp = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= 2 * T * kv_heads) return;
  const bool value = warp >= T * kv_heads;
  const int64_t f = value ? warp - T * kv_heads : warp;
  const int64_t t = f / kv_heads;
  const int64_t h = f - t * kv_heads;
  const int32_t p = positions[t];
  if (p < 0 || p >= cache.capacity) return;
  float a[kMaxPairsPerLane], b[kMaxPairsPerLane];
  load_head(value ? v : k, t, h, half, lane, a, b);
  const int64_t row = cache_row(cache, t, p);
  store_head(a, b, half, lane, head_codes(value ? cache.v : cache.k, row, h, 2 * half),
             (value ? cache.v_scale : cache.k_scale) + row * cache.scale_ld + h);
}

__global__ void __launch_bounds__(kWarps * 32)
    rope_store_kv_fp8_kernel(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v, int64_t rows,
                             int64_t q_heads, int64_t kv_heads, int64_t half,
                             const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                             int64_t table_positions, DecoderCache cache) {
  cuda_device::chain_begin();
  const int64_t slots = q_heads + kv_heads;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= rows * slots) return;
  const int64_t t = warp / slots;
  const int64_t slot = warp - t * slots;
  const int32_t p = positions[t];
  const bool rotate = p >= 0 && p < table_positions;  // else left as it is, as decoder_rope
  const bool is_k = slot >= q_heads;
  const int64_t h = is_k ? slot - q_heads : slot;
  float* x = static_cast<float*>(is_k ? k.data : q.data) + t * (is_k ? k.ld : q.ld) + h * 2 * half;
  float a[kMaxPairsPerLane], b[kMaxPairsPerLane];
#pragma unroll
  for (int r = 0; r < kMaxPairsPerLane; ++r) {
    const int64_t i = lane + 32 * r;
    a[r] = 0.0f;
    b[r] = 0.0f;
    if (i < half) {
      a[r] = x[i];
      b[r] = x[i + half];
      if (rotate) {
        rotate_pair(a[r], b[r], cos, sin, p, i);
        x[i] = a[r];
        x[i + half] = b[r];
      }
    }
  }
  if (!is_k || p < 0 || p >= cache.capacity) return;
  const int64_t row = cache_row(cache, t, p);
  store_head(a, b, half, lane, head_codes(cache.k, row, h, 2 * half),
             cache.k_scale + row * cache.scale_ld + h);
  load_head(v, t, h, half, lane, a, b);
  store_head(a, b, half, lane, head_codes(cache.v, row, h, 2 * half),
             cache.v_scale + row * cache.scale_ld + h);
}

unsigned warp_blocks(int64_t warps) { return static_cast<unsigned>((warps + kWarps - 1) / kWarps); }

}  // namespace

cudaError_t decoder_store_kv_fp8(DecoderMatrix k, DecoderMatrix v, const int32_t* positions,
                                 int64_t T, int64_t kv_heads, int64_t head_dim, DecoderCache cache,
                                 cudaStream_t stream) {
  if (T * kv_heads == 0) return cudaSuccess;
  if (head_dim % 2 != 0 || head_dim > kDecoderMaxHeadDim || cache.v.code != kF8 ||
      cache.k_scale == nullptr || cache.v_scale == nullptr || T * kv_heads > (int64_t{1} << 33)) {
    return cudaErrorInvalidValue;  // cuda_ops.cc checks these first, with messages
  }
  return cuda_device::launch_chained(store_kv_fp8_kernel, warp_blocks(2 * T * kv_heads),
                                     kWarps * 32, 0, stream, k, v, positions, T, kv_heads,
                                     head_dim / 2, cache);
}

cudaError_t decoder_rope_store_kv_fp8(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v,
                                      int64_t rows, int64_t q_heads, int64_t kv_heads,
                                      int64_t head_dim, const int32_t* positions, DecoderMatrix cos,
                                      DecoderMatrix sin, int64_t table_positions,
                                      DecoderCache cache, cudaStream_t stream) {
  if (rows * (q_heads + kv_heads) == 0) return cudaSuccess;
  if (head_dim % 2 != 0 || head_dim > kDecoderMaxHeadDim || cache.v.code != kF8 ||
      cache.k_scale == nullptr || cache.v_scale == nullptr || q.code != kF32 || k.code != kF32 ||
      rows * (q_heads + kv_heads) > (int64_t{1} << 33)) {
    return cudaErrorInvalidValue;
  }
  return cuda_device::launch_chained(
      rope_store_kv_fp8_kernel, warp_blocks(rows * (q_heads + kv_heads)), kWarps * 32, 0, stream, q,
      k, v, rows, q_heads, kv_heads, head_dim / 2, positions, cos, sin, table_positions, cache);
}

}  // namespace qlinear::cuda_launch
