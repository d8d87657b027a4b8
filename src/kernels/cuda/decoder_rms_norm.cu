// RMSNorm for the decoder (model/ops.h): the row norm, fused with the residual add before it
// (add_rms_norm), and the per-head norm of Qwen3's q_norm / k_norm. The two share the reduction,
// so they share this file.
//
// The sum of squares is taken in f64, as the CPU ops take it (cpu_ops.cc inverse_rms): the f64
// sum then rounds to the same f32 inverse almost always whatever the summation order, and the
// outputs w * (x * inv) are the CPU's bit for bit in those rows. f64 costs nothing here: a row is
// a few thousand elements against a GPU with f64 units on every SM.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::load_exact;
using cuda_device::store_exact;

constexpr int kRowThreads = 1024;  // one block per row
constexpr int kHeadsPerBlock = 4;  // one warp per (row, head)

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;  // the butterfly leaves every lane the same sum
}

__device__ __forceinline__ float inverse_rms(double sum, int64_t n, float eps) {
  return static_cast<float>(1.0 / sqrt(sum / static_cast<double>(n) + eps));
}

// Elements a thread loads before it uses any: the loads of a chunk are in flight together (the
// compiler may not hoist a load above the previous element's store, which might alias it, so a
// plain loop paid one memory latency per element: 16 us for one 4096-wide row on an H200).
constexpr int kChunk = 8;

// One block per row: x (+= delta when delta.data is set), then out = w * (x * inv). The first
// kChunk * kRowThreads elements (all of a row up to 8192 wide) stay in registers between the sum
// and the output, and their weights are loaded with them: one memory round trip before the
// reduction instead of three (6.5 us per 4096-wide row with 256 threads and a second pass).
__global__ void rms_norm_kernel(DecoderMatrix x, DecoderMatrix delta, const float* weight,
                                float eps, DecoderMatrix out, int64_t cols) {
  __shared__ double partial[kRowThreads / 32];
  cuda_device::allow_next_grid();
  const int64_t t = blockIdx.x;
  float* row = static_cast<float*>(x.data) + t * x.ld;
  const char* d = static_cast<const char*>(delta.data);
  const int64_t d_bytes = delta.code == kF32 ? 4 : 2;
  const char* d_row = d != nullptr ? d + t * delta.ld * d_bytes : nullptr;
  // Each thread's elements i = threadIdx.x + k * kRowThreads, in increasing k (the order of the
  // f64 sum), kChunk of them per step.
  double sum = 0.0;
  float kept[kChunk];
  float kept_w[kChunk];
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    const int64_t i = threadIdx.x + k * kRowThreads;
    kept_w[k] = i < cols ? weight[i] : 0.0f;
  }
  // The weights are constant: they load while the kernel before this one finishes.
  cuda_device::wait_for_prior_grids();
  for (int64_t base = threadIdx.x; base < cols; base += kChunk * kRowThreads) {
    float r[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const int64_t i = base + k * kRowThreads;
      r[k] = i < cols ? row[i] : 0.0f;
    }
    if (d_row != nullptr) {
      float dv[kChunk];
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int64_t i = base + k * kRowThreads;
        dv[k] = i < cols ? load_exact(d_row, i, delta.code) : 0.0f;
      }
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int64_t i = base + k * kRowThreads;
        r[k] = __fadd_rn(r[k], dv[k]);
        if (i < cols) row[i] = r[k];
      }
    }
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      if (base + k * kRowThreads < cols) sum += static_cast<double>(r[k]) * r[k];
    }
    if (base == threadIdx.x) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) kept[k] = r[k];
    }
  }
  sum = warp_sum(sum);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    double s = threadIdx.x < kRowThreads / 32 ? partial[threadIdx.x] : 0.0;
    s = warp_sum(s);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  const float inv = inverse_rms(partial[0], cols, eps);
  const int64_t o_bytes = out.code == kF32 ? 4 : 2;
  void* dst = static_cast<char*>(out.data) + t * out.ld * o_bytes;
  // Past the kept chunk each thread reads back only the elements it wrote itself above.
  for (int64_t base = threadIdx.x; base < cols; base += kChunk * kRowThreads) {
    float r[kChunk];
    float w[kChunk];
    const bool first = base == threadIdx.x;
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const int64_t i = base + k * kRowThreads;
      r[k] = first ? kept[k] : i < cols ? row[i] : 0.0f;
      w[k] = first ? kept_w[k] : i < cols ? weight[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const int64_t i = base + k * kRowThreads;
      if (i < cols) store_exact(dst, i, __fmul_rn(w[k], __fmul_rn(r[k], inv)), out.code);
    }
  }
}

__global__ void head_rms_norm_kernel(DecoderMatrix x, int64_t rows, int64_t heads, int64_t head_dim,
                                     const float* weight, float eps) {
  cuda_device::chain_begin();
  const int64_t job = blockIdx.x * static_cast<int64_t>(kHeadsPerBlock) + threadIdx.x / 32;
  if (job >= rows * heads) return;  // whole warps leave together
  const int64_t t = job / heads;
  const int64_t h = job - t * heads;
  float* v = static_cast<float*>(x.data) + t * x.ld + h * head_dim;
  const int lane = threadIdx.x % 32;
  double sum = 0.0;
  for (int64_t i = lane; i < head_dim; i += 32) sum += static_cast<double>(v[i]) * v[i];
  const float inv = inverse_rms(warp_sum(sum), head_dim, eps);
  for (int64_t i = lane; i < head_dim; i += 32) v[i] = __fmul_rn(weight[i], __fmul_rn(v[i], inv));
}

}  // namespace

cudaError_t decoder_rms_norm(DecoderMatrix x, DecoderMatrix delta, const float* weight, float eps,
                             DecoderMatrix out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  return cuda_device::launch_chained(rms_norm_kernel, static_cast<unsigned>(rows), kRowThreads, 0,
                                     stream, x, delta, weight, eps, out, cols);
}

cudaError_t decoder_head_rms_norm(DecoderMatrix x, int64_t rows, int64_t heads, int64_t head_dim,
                                  const float* weight, float eps, cudaStream_t stream) {
  const int64_t jobs = rows * heads;
  if (jobs == 0 || head_dim == 0) return cudaSuccess;
  const auto grid = static_cast<unsigned>((jobs + kHeadsPerBlock - 1) / kHeadsPerBlock);
  return cuda_device::launch_chained(head_rms_norm_kernel, grid, kHeadsPerBlock * 32, 0, stream, x,
                                     rows, heads, head_dim, weight, eps);
}

}  // namespace qlinear::cuda_launch
