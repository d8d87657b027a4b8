// The fused dynamic FP8 activation quantizer of the CUDA W8A8 kernels, bit for bit the contract of
// kernels/common/activation_quant.h: absmax by fmaxf (NaN ignored, as std::max there), the scale
// max(amax / 448, 1/(448*512)) by IEEE division, per-token and per-group codes RNE(clamp(x / s))
// by IEEE division, per-tensor and static RNE(clamp(x * (1/s))), the clamp letting NaN through and
// cuda_fp8.h's round-to-nearest-even conversion (hardware cvt on sm89+); 16-byte loads where the
// rows are aligned (the same arithmetic per element). One launch for per-token and per-group; two
// for dynamic per-tensor (row maxima, then one block per slice of rows reduces them and quantizes).
#include <cuda_fp8.h>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

constexpr int kThreads = 256;
constexpr float kMax = 448.0f;

__device__ __forceinline__ uint8_t encode(float v) {
  v = v < -kMax ? -kMax : (v > kMax ? kMax : v);  // NaN passes, as std::clamp
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

__device__ __forceinline__ float dynamic_scale(float amax) {
  return fmaxf(__fdiv_rn(amax, kMax), kFp8ActScaleFloor);
}

__device__ float block_max(float v, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) shared[warp] = v;
  __syncthreads();
  float m = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) m = fmaxf(m, shared[w]);
  __syncthreads();
  return m;
}

// 16-byte loads of 8 consecutive elements (f32: two) and 8-byte stores of their codes, for rows
// whose start is 16-byte aligned (fp8_quantize checks); the same per-element arithmetic as the
// scalar kernels, so the codes and scales are the same bits.
__device__ __forceinline__ void load8(const void* p, int64_t i, int code, float (&f)[8]) {
  if (code == kF32) {
    const float4 a = *reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
    const float4 b = *reinterpret_cast<const float4*>(static_cast<const float*>(p) + i + 4);
    f[0] = a.x;
    f[1] = a.y;
    f[2] = a.z;
    f[3] = a.w;
    f[4] = b.x;
    f[5] = b.y;
    f[6] = b.z;
    f[7] = b.w;
    return;
  }
  const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p) + i);
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const auto lo = static_cast<unsigned short>(w[j] & 0xFFFFu);
    const auto hi = static_cast<unsigned short>(w[j] >> 16);
    if (code == kBF16) {
      f[2 * j] = __bfloat162float(__ushort_as_bfloat16(lo));
      f[2 * j + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
    } else {
      f[2 * j] = __half2float(__ushort_as_half(lo));
      f[2 * j + 1] = __half2float(__ushort_as_half(hi));
    }
  }
}

__device__ __forceinline__ float abs_max8(float amax, const float (&f)[8]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(f[j]));
  return amax;
}

// codes of x / s (divide) or x * s (multiply), 8 at a time.
template <bool kDivide>
__device__ __forceinline__ void store8(uint8_t* codes, const float (&f)[8], float s) {
  uint32_t word[2] = {0, 0};
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float q = kDivide ? __fdiv_rn(f[j], s) : __fmul_rn(f[j], s);
    word[j >> 2] |= static_cast<uint32_t>(encode(q)) << (8 * (j & 3));
  }
  *reinterpret_cast<uint2*>(codes) = make_uint2(word[0], word[1]);
}

__global__ void token_kernel_vec(const void* x, int64_t ldx, int code, int64_t K, uint8_t* codes,
                                 float* scales) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  const int64_t vecs = K / 8;
  float amax = 0.0f;
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < vecs; v += blockDim.x) {
    float f[8];
    load8(x, m * ldx + v * 8, code, f);
    amax = abs_max8(amax, f);
  }
  const float s = dynamic_scale(block_max(amax, shared));
  if (threadIdx.x == 0) scales[m] = s;
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < vecs; v += blockDim.x) {
    float f[8];
    load8(x, m * ldx + v * 8, code, f);
    store8<true>(codes + m * K + v * 8, f, s);
  }
}

__global__ void row_max_kernel_vec(const void* x, int64_t ldx, int code, int64_t K,
                                   float* row_max) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  float amax = 0.0f;
#pragma unroll 4
  for (int64_t v = threadIdx.x; v < K / 8; v += blockDim.x) {
    float f[8];
    load8(x, m * ldx + v * 8, code, f);
    amax = abs_max8(amax, f);
  }
  amax = block_max(amax, shared);
  if (threadIdx.x == 0) row_max[m] = amax;
}

// One block per row: per-token scale and codes.
__global__ void token_kernel(const void* x, int64_t ldx, int code, int64_t K, uint8_t* codes,
                             float* scales) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  float amax = 0.0f;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
    amax = fmaxf(amax, fabsf(cuda_device::load_element(x, m * ldx + k, code)));
  }
  const float s = dynamic_scale(block_max(amax, shared));
  if (threadIdx.x == 0) scales[m] = s;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
    codes[m * K + k] = encode(__fdiv_rn(cuda_device::load_element(x, m * ldx + k, code), s));
  }
}

// One warp per (row, group).
__global__ void group_kernel(const void* x, int64_t ldx, int code, int64_t M, int64_t K,
                             int64_t group_k, bool group_major, uint8_t* codes, float* scales) {
  const int64_t groups = (K + group_k - 1) / group_k;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const int lane = threadIdx.x & 31;
  for (int64_t wi = blockIdx.x * static_cast<int64_t>(blockDim.x >> 5) + (threadIdx.x >> 5);
       wi < M * groups; wi += warps) {
    const int64_t m = wi / groups;
    const int64_t g = wi - m * groups;
    const int64_t k0 = g * group_k;
    const int64_t k1 = min(K, k0 + group_k);
    float amax = 0.0f;
    for (int64_t k = k0 + lane; k < k1; k += 32) {
      amax = fmaxf(amax, fabsf(cuda_device::load_element(x, m * ldx + k, code)));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    const float s = dynamic_scale(amax);
    if (lane == 0) scales[group_major ? g * M + m : m * groups + g] = s;
    for (int64_t k = k0 + lane; k < k1; k += 32) {
      codes[m * K + k] = encode(__fdiv_rn(cuda_device::load_element(x, m * ldx + k, code), s));
    }
  }
}

__global__ void row_max_kernel(const void* x, int64_t ldx, int code, int64_t K, float* row_max) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  float amax = 0.0f;
  for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
    amax = fmaxf(amax, fabsf(cuda_device::load_element(x, m * ldx + k, code)));
  }
  amax = block_max(amax, shared);
  if (threadIdx.x == 0) row_max[m] = amax;
}

// Per-tensor: s from the row maxima (dynamic) or the checkpoint's input_scale (static).
__global__ void tensor_kernel(const void* x, int64_t ldx, int code, int64_t M, int64_t K,
                              const float* row_max, float static_scale, bool replicate, bool vec,
                              uint8_t* codes, float* scales) {
  __shared__ float shared[32];
  float s = static_scale;
  if (row_max != nullptr) {
    float amax = 0.0f;
    for (int64_t m = threadIdx.x; m < M; m += blockDim.x) amax = fmaxf(amax, row_max[m]);
    s = dynamic_scale(block_max(amax, shared));
  }
  const float inv = __fdiv_rn(1.0f, s);
  if (blockIdx.x == 0 && threadIdx.x == 0) scales[0] = s;
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    if (replicate && threadIdx.x == 0) scales[m] = s;
    if (vec) {
#pragma unroll 4
      for (int64_t v = threadIdx.x; v < K / 8; v += blockDim.x) {
        float f[8];
        load8(x, m * ldx + v * 8, code, f);
        store8<false>(codes + m * K + v * 8, f, inv);
      }
      continue;
    }
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
      codes[m * K + k] = encode(__fmul_rn(cuda_device::load_element(x, m * ldx + k, code), inv));
    }
  }
}

}  // namespace

cudaError_t fp8_quantize(const void* x, int64_t ldx, int code, int64_t M, int64_t K, int kind,
                         float static_scale, int64_t group_k, bool group_major, bool replicate,
                         uint8_t* codes, float* scales, float* scratch, cudaStream_t stream) {
  if (M == 0) return cudaSuccess;
  const unsigned rows = static_cast<unsigned>(M);
  // Rows that start on 16 bytes (and codes rows on 8) take the vector kernels.
  const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && ldx % 8 == 0 && K % 8 == 0 &&
                   reinterpret_cast<uintptr_t>(codes) % 8 == 0;
  switch (kind) {
    case kActToken:
      if (vec) {
        token_kernel_vec<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, codes, scales);
      } else {
        token_kernel<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, codes, scales);
      }
      break;
    case kActGroup: {
      const int64_t warps = M * ((K + group_k - 1) / group_k);
      const int64_t blocks = (warps + kThreads / 32 - 1) / (kThreads / 32);
      group_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
          x, ldx, code, M, K, group_k, group_major, codes, scales);
      break;
    }
    case kActTensor:
    case kActStatic: {
      const bool dynamic = kind == kActTensor;
      if (dynamic) {
        if (vec) {
          row_max_kernel_vec<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, scratch);
        } else {
          row_max_kernel<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, scratch);
        }
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
      }
      const unsigned blocks = static_cast<unsigned>(M < 264 ? M : 264);
      tensor_kernel<<<blocks, kThreads, 0, stream>>>(x, ldx, code, M, K,
                                                     dynamic ? scratch : nullptr, static_scale,
                                                     replicate, vec, codes, scales);
      break;
    }
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace qlinear::cuda_launch
