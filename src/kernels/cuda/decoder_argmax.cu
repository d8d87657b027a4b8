// Greedy decoding's argmax for the decoder (model/ops.h argmax): per row of f32 logits the first
// index of the maximum, NaN never winning, 0 when nothing is above -inf (model/sampler.cc
// greedy_token). It runs as the last kernel of a decode step, so that the step returns one id per
// row instead of the whole logits row (128256 floats for Llama 3: a 513 KB download, a host wait
// for it and a host scan, each token).
//
// One block per row: the logits were just written by the lm_head and sit in L2, and a row is read
// in a few microseconds by one SM (a split over blocks would need a second pass or atomics for a
// kernel that is ~1% of the step).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

constexpr int kThreads = 1024;
constexpr int kUnroll = 8;  // loads of a thread in flight together
constexpr int kNone = 0x7FFFFFFF;

// (value, index) pairs: the larger value wins, the lower index on ties; index kNone is "no value
// above -inf yet" and loses to every real candidate (its value is -inf and real ones are above).
struct Best {
  float value;
  int index;
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

__device__ __forceinline__ Best warp_best(Best b) {
  for (int offset = 16; offset > 0; offset /= 2) {
    Best o;
    o.value = __shfl_xor_sync(0xFFFFFFFFu, b.value, offset);
    o.index = __shfl_xor_sync(0xFFFFFFFFu, b.index, offset);
    b = better(b, o);
  }
  return b;  // every lane holds the warp's best
}

__global__ void argmax_kernel(DecoderMatrix logits, int64_t cols, int32_t* ids) {
  __shared__ Best partial[kThreads / 32];
  cuda_device::chain_begin();
  const float* row = static_cast<const float*>(logits.data) + blockIdx.x * logits.ld;
  // Each thread scans its columns in increasing order and keeps the first of its maxima (strict
  // >, so NaN and -inf never enter).
  Best b{-INFINITY, kNone};
  for (int64_t base = threadIdx.x; base < cols; base += kUnroll * kThreads) {
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = base + k * kThreads;
      v[k] = i < cols ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      if (v[k] > b.value) b = {v[k], static_cast<int>(base + k * kThreads)};
    }
  }
  b = warp_best(b);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = b;
  __syncthreads();
  if (threadIdx.x < 32) {
    b = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : Best{-INFINITY, kNone};
    b = warp_best(b);
    if (threadIdx.x == 0) ids[blockIdx.x] = b.index == kNone ? 0 : b.index;
  }
}

}  // namespace

cudaError_t decoder_argmax(DecoderMatrix logits, int64_t rows, int64_t cols, int32_t* ids,
                           cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  return cuda_device::launch_chained(argmax_kernel, static_cast<unsigned>(rows), kThreads, 0,
                                     stream, logits, cols, ids);
}

}  // namespace qlinear::cuda_launch
