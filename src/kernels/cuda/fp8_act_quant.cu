// The fused dynamic FP8 activation quantizer of the CUDA W8A8 kernels, bit for bit the contract of
// kernels/common/activation_quant.h: absmax by fmaxf (NaN ignored, as std::max there), the scale
// max(amax / 448, 1/(448*512)) by IEEE division, per-token and per-group codes RNE(clamp(x / s))
// by IEEE division, per-tensor and static RNE(clamp(x * (1/s))), the clamp letting NaN through and
// cuda_fp8.h's round-to-nearest-even conversion (hardware cvt on sm89+). One launch for per-token
// and per-group; two for dynamic per-tensor (row maxima, then one block per slice of rows reduces
// them and quantizes).
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
                              const float* row_max, float static_scale, bool replicate,
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
  switch (kind) {
    case kActToken:
      token_kernel<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, codes, scales);
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
        row_max_kernel<<<rows, kThreads, 0, stream>>>(x, ldx, code, K, scratch);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
      }
      const unsigned blocks = static_cast<unsigned>(M < 264 ? M : 264);
      tensor_kernel<<<blocks, kThreads, 0, stream>>>(
          x, ldx, code, M, K, dynamic ? scratch : nullptr, static_scale, replicate, codes, scales);
      break;
    }
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace qlinear::cuda_launch
