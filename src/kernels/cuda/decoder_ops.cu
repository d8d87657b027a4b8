// The decoder's elementwise operations (model/ops.h) on CUDA memory: embedding rows, RoPE, the KV
// cache store, SiLU·mul, add and copy. They are grouped in one file, against the
// one-kernel-per-file rule, because each is a few lines of the same grid-stride loop over (row,
// column) with no tiling or shared memory of its own; the norms and attention, which have both,
// have their own files.
//
// Arithmetic is the CPU ops' (cpu_ops.cc) operation for operation, with the _rn intrinsics where a
// product meets a sum so that nvcc cannot contract them into an FMA the host code does not do
// (the host build has no FMA): RoPE, add and copy are then bit for bit the CPU's; SiLU differs only
// by expf's last bit.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/rope_pair.cuh"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::cache_row;
using cuda_device::load_exact;
using cuda_device::rotate_pair;
using cuda_device::store_exact;

#define QL_GRID_STRIDE(i, total)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

constexpr int kThreads = 256;

__device__ __forceinline__ void* at(DecoderMatrix m, int64_t row) {
  const int64_t bytes = m.code == kF32 ? 4 : 2;
  return static_cast<char*>(m.data) + row * m.ld * bytes;
}

__global__ void embed_kernel(DecoderMatrix table, int64_t vocab, const int32_t* ids, int64_t T,
                             int64_t H, DecoderMatrix out) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, T * H) {
    const int64_t t = e / H;
    const int64_t i = e - t * H;
    const int32_t id = ids[t];
    const float value = id < 0 || id >= vocab ? NAN : load_exact(at(table, id), i, table.code);
    static_cast<float*>(at(out, t))[i] = value;
  }
}

__global__ void rope_kernel(DecoderMatrix x, int64_t rows, int64_t heads, int64_t half,
                            const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                            int64_t table_positions) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, rows * heads * half) {
    const int64_t i = e % half;
    const int64_t h = (e / half) % heads;
    const int64_t t = e / (half * heads);
    const int32_t p = positions[t];
    if (p < 0 || p >= table_positions) continue;
    float* v = static_cast<float*>(at(x, t)) + h * 2 * half;
    float a = v[i];
    float b = v[i + half];
    rotate_pair(a, b, cos, sin, p, i);
    v[i] = a;
    v[i + half] = b;
  }
}

// Keys and values in one launch: elements [0, T * width) are k's, the next T * width v's.
__global__ void store_kv_kernel(DecoderMatrix k, DecoderMatrix v, const int32_t* positions,
                                int64_t T, int64_t width, DecoderCache cache) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, 2 * T * width) {
    const bool value = e >= T * width;
    const int64_t f = value ? e - T * width : e;
    const int64_t t = f / width;
    const int64_t i = f - t * width;
    const int32_t p = positions[t];
    if (p < 0 || p >= cache.capacity) continue;
    const DecoderMatrix src = value ? v : k;
    const DecoderMatrix dst = value ? cache.v : cache.k;
    store_exact(at(dst, cache_row(cache, t, p)), i, load_exact(at(src, t), i, src.code), dst.code);
  }
}

// rope_kernel on q's and k's pairs and store_kv_kernel on the rotated k and on v, as one grid:
// each row's items are q's pairs, then k's (rotated in place and stored), then v's elements.
__global__ void rope_store_kv_kernel(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v,
                                     int64_t rows, int64_t q_heads, int64_t kv_heads, int64_t half,
                                     const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                                     int64_t table_positions, DecoderCache cache) {
  cuda_device::chain_begin();
  const int64_t q_pairs = q_heads * half;
  const int64_t k_pairs = kv_heads * half;
  const int64_t width = kv_heads * 2 * half;
  const int64_t per_row = q_pairs + k_pairs + width;
  QL_GRID_STRIDE(e, rows * per_row) {
    const int64_t t = e / per_row;
    const int64_t r = e - t * per_row;
    const int32_t p = positions[t];
    if (r >= q_pairs + k_pairs) {  // a value
      if (p < 0 || p >= cache.capacity) continue;
      const int64_t i = r - q_pairs - k_pairs;
      store_exact(at(cache.v, cache_row(cache, t, p)), i, load_exact(at(v, t), i, v.code),
                  cache.v.code);
      continue;
    }
    const bool is_k = r >= q_pairs;
    const int64_t f = is_k ? r - q_pairs : r;
    const int64_t i = f % half;
    const int64_t h = f / half;
    float* x = static_cast<float*>(at(is_k ? k : q, t)) + h * 2 * half;
    float ra = x[i];
    float rb = x[i + half];
    if (p >= 0 && p < table_positions) {  // else left as it is, as rope_kernel leaves it
      rotate_pair(ra, rb, cos, sin, p, i);
      x[i] = ra;
      x[i + half] = rb;
    }
    if (is_k && p >= 0 && p < cache.capacity) {
      void* row = at(cache.k, cache_row(cache, t, p));
      store_exact(row, h * 2 * half + i, ra, cache.k.code);
      store_exact(row, h * 2 * half + i + half, rb, cache.k.code);
    }
  }
}

__global__ void silu_mul_kernel(DecoderMatrix gate, DecoderMatrix up, DecoderMatrix out,
                                int64_t rows, int64_t cols) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, rows * cols) {
    const int64_t t = e / cols;
    const int64_t i = e - t * cols;
    const float g = static_cast<const float*>(at(gate, t))[i];
    const float u = static_cast<const float*>(at(up, t))[i];
    store_exact(at(out, t), i, __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u), out.code);
  }
}

__global__ void add_kernel(DecoderMatrix dst, DecoderMatrix src, int64_t rows, int64_t cols) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, rows * cols) {
    const int64_t t = e / cols;
    const int64_t i = e - t * cols;
    float* d = static_cast<float*>(at(dst, t)) + i;
    *d = __fadd_rn(*d, load_exact(at(src, t), i, src.code));
  }
}

__global__ void copy_kernel(DecoderMatrix src, DecoderMatrix dst, int64_t rows, int64_t cols) {
  cuda_device::chain_begin();
  QL_GRID_STRIDE(e, rows * cols) {
    const int64_t t = e / cols;
    const int64_t i = e - t * cols;
    store_exact(at(dst, t), i, load_exact(at(src, t), i, src.code), dst.code);
  }
}

unsigned blocks(int64_t total) { return cuda_device::grid_for(total, 8192); }

}  // namespace

cudaError_t decoder_embed(DecoderMatrix table, int64_t vocab, const int32_t* ids, int64_t T,
                          int64_t H, DecoderMatrix out, cudaStream_t stream) {
  if (T * H == 0) return cudaSuccess;
  return cuda_device::launch_chained(embed_kernel, blocks(T * H), kThreads, 0, stream, table, vocab,
                                     ids, T, H, out);
}

cudaError_t decoder_rope(DecoderMatrix x, int64_t rows, int64_t heads, int64_t head_dim,
                         const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                         int64_t table_positions, cudaStream_t stream) {
  const int64_t half = head_dim / 2;
  if (rows * heads * half == 0) return cudaSuccess;
  return cuda_device::launch_chained(rope_kernel, blocks(rows * heads * half), kThreads, 0, stream,
                                     x, rows, heads, half, positions, cos, sin, table_positions);
}

cudaError_t decoder_store_kv(DecoderMatrix k, DecoderMatrix v, const int32_t* positions, int64_t T,
                             int64_t kv_heads, int64_t head_dim, DecoderCache cache,
                             cudaStream_t stream) {
  const int64_t width = kv_heads * head_dim;
  if (T * width == 0) return cudaSuccess;
  if (cache.k.code == kF8) {
    return decoder_store_kv_fp8(k, v, positions, T, kv_heads, head_dim, cache, stream);
  }
  return cuda_device::launch_chained(store_kv_kernel, blocks(2 * T * width), kThreads, 0, stream, k,
                                     v, positions, T, width, cache);
}

cudaError_t decoder_rope_store_kv(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v, int64_t rows,
                                  int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                  const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                                  int64_t table_positions, DecoderCache cache,
                                  cudaStream_t stream) {
  const int64_t half = head_dim / 2;
  const int64_t total = rows * ((q_heads + kv_heads) * half + kv_heads * head_dim);
  if (total == 0) return cudaSuccess;
  if (cache.k.code == kF8) {
    return decoder_rope_store_kv_fp8(q, k, v, rows, q_heads, kv_heads, head_dim, positions, cos,
                                     sin, table_positions, cache, stream);
  }
  return cuda_device::launch_chained(rope_store_kv_kernel, blocks(total), kThreads, 0, stream, q, k,
                                     v, rows, q_heads, kv_heads, half, positions, cos, sin,
                                     table_positions, cache);
}

cudaError_t decoder_silu_mul(DecoderMatrix gate, DecoderMatrix up, DecoderMatrix out, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  return cuda_device::launch_chained(silu_mul_kernel, blocks(rows * cols), kThreads, 0, stream,
                                     gate, up, out, rows, cols);
}

cudaError_t decoder_add(DecoderMatrix dst, DecoderMatrix src, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  return cuda_device::launch_chained(add_kernel, blocks(rows * cols), kThreads, 0, stream, dst, src,
                                     rows, cols);
}

cudaError_t decoder_copy(DecoderMatrix src, DecoderMatrix dst, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  return cuda_device::launch_chained(copy_kernel, blocks(rows * cols), kThreads, 0, stream, src,
                                     dst, rows, cols);
}

}  // namespace qlinear::cuda_launch
