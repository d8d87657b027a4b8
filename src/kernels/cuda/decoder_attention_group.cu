// Causal grouped-query attention by query group: one block per (kv head, row, part of the keys)
// serves every query head that reads that kv head, so the group's keys and values are read once,
// through shared memory. A tile of kTile key rows and their value rows is requested with cp.async
// in one go (16-byte copies spread over the block, two tiles in flight) before any of it is used:
// one memory round trip per tile, where decoder_attention.cu's per-(query head, row) kernel walks
// its keys as a chain of dependent loads (a warp's run of 4 keys, then their values, then the
// next run). Then, from shared memory and in f32 like that kernel and the CPU ops: the G x kTile
// scores (a thread per (head, key), the key row read as 16-byte vectors, q broadcast), the online
// softmax per tile (a warp per head, a lane per key), and the value sums (a thread per 4
// consecutive output elements). Split over the keys (a.splits > 1) as that kernel does: the
// parts' (max, sum, accumulator) go to a.partials per query head and the last block of the
// (row, kv head) merges them in part order (deterministic, one launch, graph-capturable).
//
// Why (H200, Llama-3 8B decode at 128-256 positions, bench/results/h200-attention-2026-12-03):
// the per-head kernel cost 14.7 us per layer inside the step and, at 1056 blocks of 256 threads,
// filled every SM, so the o_proj gemv after it could not schedule its blocks and prefetch its
// codes during it (o_proj cost twice qkv_proj in the graph although it reads fewer bytes).
//
// Takes caches whose k and v share one dtype, rows of whole 16-byte vectors (head_dim x element
// size, the leading dimensions and the pointers) and head_dim <= 256, groups of <= 16 heads
// (decoder_attention_grouped_fits); decoder_attention.cu's kernel takes everything else.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_split.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/mma_sm80.cuh"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::cp_async16;
using cuda_device::cp_async_commit;
using cuda_device::cp_async_wait;
using cuda_device::store_exact;
using cuda_device::warp_max;
using cuda_device::warp_sum;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 32;  // keys per tile: one per lane in the softmax
constexpr int kStages = 2;
constexpr int kMaxGroup = 16;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxElementGroups = kMaxGroup * kMaxHeadDim / 4 / kThreads;  // of 4 outputs

constexpr int element_bytes(int code) { return code == kF32 ? 4 : (code == kF8 ? 1 : 2); }

// Shared memory rows of `chunks` 16-byte vectors are padded to an odd number of vectors, so the
// 8 lanes of a quarter warp reading the same vector of 8 consecutive rows hit distinct banks.
__host__ __device__ constexpr int row_stride(int chunks) { return chunks + 1 + (chunks & 1); }

struct Layout {
  int chunks;  // 16-byte vectors per key row
  int stride;  // of a row in shared memory, in vectors
  // Offsets in floats after the tiles.
  int q, p, m, l, c, ks, vs, w, inv, floats;
  int tile_vectors;  // of all stages' key and value tiles
};

__host__ __device__ inline Layout layout_of(int group, int d, int code) {
  Layout s{};
  s.chunks = d * element_bytes(code) / 16;
  s.stride = row_stride(s.chunks);
  s.tile_vectors = kStages * 2 * kTile * s.stride;
  s.q = 0;                                  // the group's q rows [G][d]
  s.p = s.q + group * d;                    // scores, then softmax weights [G][kTile]
  s.m = s.p + group * kTile;                // running max [G]
  s.l = s.m + group;                        // running sum [G]
  s.c = s.l + group;                        // this tile's correction [G]
  s.ks = s.c + group;                       // an FP8 cache's key scales [kStages][kTile]
  s.vs = s.ks + kStages * kTile;            // and value scales
  s.w = s.vs + kStages * kTile;             // the merge's part weights [G][kDecoderMaxSplits]
  s.inv = s.w + group * kDecoderMaxSplits;  // and 1 / sum [G]
  s.floats = s.inv + group;
  return s;
}

std::size_t smem_bytes(const Layout& s) {
  return static_cast<std::size_t>(s.tile_vectors) * 16 + static_cast<std::size_t>(s.floats) * 4;
}

__device__ __forceinline__ void cp_async4(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}

__device__ __forceinline__ float2 e4m3x2_to_float2(uint32_t pair) {
  const auto bits = static_cast<__nv_fp8x2_storage_t>(pair & 0xFFFFu);
  return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(bits, __NV_E4M3)));
}

// One 32-bit word of cache elements as f32 (1, 2 or 4 of them; e4m3 exact through f16).
template <int kCode>
__device__ __forceinline__ void word_to_f32(uint32_t w, float* out) {
  if constexpr (kCode == kF32) {
    out[0] = __uint_as_float(w);
  } else if constexpr (kCode == kBF16) {
    out[0] = __uint_as_float(w << 16);
    out[1] = __uint_as_float(w & 0xFFFF0000u);
  } else if constexpr (kCode == kF16) {
    __half2 h;
    memcpy(&h, &w, 4);
    const float2 f = __half22float2(h);
    out[0] = f.x;
    out[1] = f.y;
  } else {
    const float2 lo = e4m3x2_to_float2(w);
    const float2 hi = e4m3x2_to_float2(w >> 16);
    out[0] = lo.x;
    out[1] = lo.y;
    out[2] = hi.x;
    out[3] = hi.y;
  }
}

// The 4 elements from `p` (4-element aligned) as f32.
template <int kCode>
__device__ __forceinline__ void quad_to_f32(const void* p, float (&out)[4]) {
  if constexpr (kCode == kF32) {
    const float4 v = *static_cast<const float4*>(p);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  } else if constexpr (kCode == kF8) {
    word_to_f32<kCode>(*static_cast<const uint32_t*>(p), out);
  } else {
    const uint2 v = *static_cast<const uint2*>(p);
    word_to_f32<kCode>(v.x, out);
    word_to_f32<kCode>(v.y, out + 2);
  }
}

// Requests tile rows [r_begin, r_end) of the key and value rows [j0, j0 + n) of kv head kvh
// (cache rows base + j) into stage `stage`; rows past n are zero-filled (their scores are -inf
// and the value loop stops at n). Not committed: the caller closes the group.
template <int kCode>
__device__ __forceinline__ void issue_rows(const DecoderAttention& a, const Layout& s, uint4* tiles,
                                           float* f, int stage, int64_t base, int j0, int n,
                                           int kvh, int r_begin, int r_end) {
  constexpr int kElem = element_bytes(kCode);
  const int chunks = (r_end - r_begin) * s.chunks;
  for (int i = static_cast<int>(threadIdx.x); i < 2 * chunks; i += kThreads) {
    const int which = i >= chunks ? 1 : 0;  // 0 keys, 1 values
    const int r = r_begin + (i - which * chunks) / s.chunks;
    const int v = (i - which * chunks) % s.chunks;
    const DecoderMatrix& m = which != 0 ? a.cache.v : a.cache.k;
    const int64_t row = base + j0 + min(r, n - 1);
    const char* src = static_cast<const char*>(m.data) +
                      (row * m.ld + static_cast<int64_t>(kvh) * a.head_dim) * kElem + 16 * v;
    cp_async16(tiles + ((stage * 2 + which) * kTile + r) * s.stride + v, src, r < n);
  }
  if constexpr (kCode == kF8) {
    for (int r = r_begin + static_cast<int>(threadIdx.x); r < min(r_end, n); r += kThreads) {
      const int64_t at = (base + j0 + r) * a.cache.scale_ld + kvh;
      cp_async4(f + s.ks + stage * kTile + r, a.cache.k_scale + at);
      cp_async4(f + s.vs + stage * kTile + r, a.cache.v_scale + at);
    }
  }
}

// A whole tile as one commit group.
template <int kCode>
__device__ __forceinline__ void issue_tile(const DecoderAttention& a, const Layout& s, uint4* tiles,
                                           float* f, int stage, int64_t base, int j0, int n,
                                           int kvh) {
  issue_rows<kCode>(a, s, tiles, f, stage, base, j0, n, kvh, 0, kTile);
  cp_async_commit();
}

template <int kCode>
__global__ void __launch_bounds__(kThreads) attention_group_kernel(DecoderAttention a) {
  extern __shared__ uint4 smem[];
  // Settled (decode): the positions and the keys before the newest are read before the wait,
  // so tile 0 streams in while the RoPE and KV store before this kernel still runs.
  cuda_device::allow_next_grid();
  if (!a.settled) cuda_device::wait_for_prior_grids();
  const int kvh = static_cast<int>(blockIdx.x);
  const int64_t t = blockIdx.y;
  const int split = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int d = a.head_dim;
  const int group = a.heads / a.kv_heads;
  const int outputs = group * d;  // of this block, 4 per element group
  const Layout s = layout_of(group, d, kCode);
  uint4* tiles = smem;
  float* f = reinterpret_cast<float*>(smem + s.tile_vectors);
  const int64_t o_bytes = a.out.code == kF32 ? 4 : 2;
  void* out = static_cast<char*>(a.out.data) +
              (t * a.out.ld + static_cast<int64_t>(kvh) * group * d) * o_bytes;
  const int last = a.positions[t];
  if (last < 0 || last >= a.cache.capacity) {
    cuda_device::wait_for_prior_grids();  // out is read by the kernels before
    for (int i = tid; i < outputs; i += kThreads) store_exact(out, i, NAN, a.out.code);
    return;
  }
  int first = a.window > 0 ? max(0, last - a.window + 1) : 0;
  const int64_t base = cuda_device::cache_row(a.cache, t, 0);
  int end = last;  // this block's keys: [first, end]
  int used = 1;
  if (a.splits > 1) {
    const int keys = last - first + 1;
    const int chunk = max((keys + a.splits - 1) / a.splits, max(a.min_split_keys, 1));
    used = (keys + chunk - 1) / chunk;
    if (split >= used) return;  // no keys: not counted
    first += split * chunk;
    end = min(last, first + chunk - 1);
  }
  const int keys = end - first + 1;
  const int tile_count = (keys + kTile - 1) / kTile;
  const int n0 = min(kTile, keys);
  if (a.settled) {
    // Every row of tile 0 but the newest (written by the kernel before), then, past the wait,
    // that one in a group of its own (committed before tile 1's, so the loop's waits cover it).
    const bool newest = first + n0 - 1 == last;
    issue_rows<kCode>(a, s, tiles, f, 0, base, first, n0, kvh, 0, newest ? n0 - 1 : kTile);
    if (newest) issue_rows<kCode>(a, s, tiles, f, 0, base, first, n0, kvh, n0, kTile);
    cp_async_commit();
    cuda_device::wait_for_prior_grids();
    if (newest) issue_rows<kCode>(a, s, tiles, f, 0, base, first, n0, kvh, n0 - 1, n0);
    cp_async_commit();
  } else {
    issue_tile<kCode>(a, s, tiles, f, 0, base, first, n0, kvh);
  }
  // The group's q rows (contiguous in q) and the running state, while tile 0 is in flight.
  const float* qrow =
      static_cast<const float*>(a.q.data) + t * a.q.ld + static_cast<int64_t>(kvh) * group * d;
  for (int i = tid; i < outputs; i += kThreads) f[s.q + i] = qrow[i];
  for (int g = tid; g < group; g += kThreads) {
    f[s.m + g] = -INFINITY;
    f[s.l + g] = 0.0f;
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  // body(e, g, c) for each of this thread's element groups e: the block's outputs
  // [4 (tid + e kThreads), + 4), columns c to c + 3 of head g; acc[e] holds their sums.
  auto each_quad = [&](auto&& body) {
#pragma unroll
    for (int e = 0; e < kMaxElementGroups; ++e) {
      const int o = 4 * (tid + e * kThreads);
      if (o < outputs) body(e, o / d, o % d);
    }
  };
  float acc[kMaxElementGroups][4] = {};
  constexpr int kElem = element_bytes(kCode);
  constexpr int kPerVector = 16 / kElem;
  for (int tile = 0; tile < tile_count; ++tile) {
    const int stage = tile % kStages;
    const int j0 = first + tile * kTile;
    const int n = min(kTile, end - j0 + 1);
    // The next tile's stage was last read by tile - 1, finished at that tile's last barrier.
    if (tile + 1 < tile_count) {
      issue_tile<kCode>(a, s, tiles, f, (tile + 1) % kStages, base, j0 + kTile,
                        min(kTile, end - (j0 + kTile) + 1), kvh);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint4* k_tile = tiles + (stage * 2) * kTile * s.stride;
    const uint4* v_tile = tiles + (stage * 2 + 1) * kTile * s.stride;
    // Scores: thread (head g, key j), the lanes of a warp on 32 keys of one head.
    for (int p = tid; p < group * kTile; p += kThreads) {
      const int g = p / kTile;
      const int j = p - g * kTile;
      float score = -INFINITY;
      if (j < n) {
        const uint4* krow = k_tile + j * s.stride;
        // q rows start on 16 bytes: head_dim is a multiple of 4 and the tiles' size of 16.
        const float4* qg = reinterpret_cast<const float4*>(f + s.q + g * d);
        float dot[2] = {0.0f, 0.0f};
        for (int v = 0; v < s.chunks; ++v) {
          const uint4 w = krow[v];
          float kv[kPerVector];
          word_to_f32<kCode>(w.x, kv);
          word_to_f32<kCode>(w.y, kv + kPerVector / 4);
          word_to_f32<kCode>(w.z, kv + kPerVector / 2);
          word_to_f32<kCode>(w.w, kv + 3 * kPerVector / 4);
#pragma unroll
          for (int i = 0; i < kPerVector / 4; ++i) {
            const float4 q4 = qg[v * (kPerVector / 4) + i];
            dot[0] = fmaf(q4.x, kv[4 * i], dot[0]);
            dot[1] = fmaf(q4.y, kv[4 * i + 1], dot[1]);
            dot[0] = fmaf(q4.z, kv[4 * i + 2], dot[0]);
            dot[1] = fmaf(q4.w, kv[4 * i + 3], dot[1]);
          }
        }
        float sum = dot[0] + dot[1];
        if constexpr (kCode == kF8) sum *= f[s.ks + stage * kTile + j];
        score = sum * scale;
      }
      f[s.p + p] = score;
    }
    __syncthreads();
    // Online softmax per head over the tile: a warp per head, a lane per key.
    for (int g = warp; g < group; g += kWarps) {
      const float score = f[s.p + g * kTile + lane];
      const float m_old = f[s.m + g];
      const float m_new = fmaxf(m_old, warp_max(score));
      const float prob = lane < n ? expf(score - m_new) : 0.0f;
      const float sum = warp_sum(prob);
      const float correction = expf(m_old - m_new);
      // An FP8 value's scale multiplies its softmax weight (not the sum) instead of its elements.
      f[s.p + g * kTile + lane] = kCode == kF8 ? prob * f[s.vs + stage * kTile + lane] : prob;
      __syncwarp();
      if (lane == 0) {
        f[s.m + g] = m_new;
        f[s.l + g] = f[s.l + g] * correction + sum;
        f[s.c + g] = correction;
      }
    }
    __syncthreads();
    // Value sums: thread tid's element groups e (4 consecutive outputs of one head each).
    each_quad([&](int e, int g, int c) {
      const float correction = f[s.c + g];
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[e][k] *= correction;
      const float* weights = f + s.p + g * kTile;
      const char* column = reinterpret_cast<const char*>(v_tile) + c * kElem;
      for (int j = 0; j < n; ++j) {
        float v[4];
        quad_to_f32<kCode>(column + static_cast<int64_t>(j) * s.stride * 16, v);
        const float w = weights[j];
#pragma unroll
        for (int k = 0; k < 4; ++k) acc[e][k] = fmaf(w, v[k], acc[e][k]);
      }
    });
    __syncthreads();  // the stage and the weights are rewritten by the next tile
  }
  if (used == 1) {
    each_quad([&](int e, int g, int c) {
      const float inv = 1.0f / f[s.l + g];
#pragma unroll
      for (int k = 0; k < 4; ++k) store_exact(out, g * d + c + k, acc[e][k] * inv, a.out.code);
    });
    return;
  }
  // This part's partials per head: [max, sum, accumulator[d]] at (pair * splits + split).
  const int64_t stride = d + 2;
  const int64_t first_pair = t * a.heads + static_cast<int64_t>(kvh) * group;
  for (int g = tid; g < group; g += kThreads) {
    float* mine = a.partials + ((first_pair + g) * a.splits + split) * stride;
    mine[0] = f[s.m + g];
    mine[1] = f[s.l + g];
  }
  each_quad([&](int e, int g, int c) {
    float* mine = a.partials + ((first_pair + g) * a.splits + split) * stride + 2 + c;
#pragma unroll
    for (int k = 0; k < 4; ++k) mine[k] = acc[e][k];
  });
  __threadfence();
  __syncthreads();
  __shared__ bool merge;
  int* counter = a.counters + t * a.kv_heads + kvh;
  if (tid == 0) merge = atomicAdd(counter, 1) == used - 1;
  __syncthreads();
  if (!merge) return;
  __threadfence();
  // Per head (a warp each): the parts' weights and 1 / sum.
  for (int g = warp; g < group; g += kWarps) {
    const float* all = a.partials + (first_pair + g) * a.splits * stride;
    const float inv =
        cuda_device::split_part_weights(all, stride, used, lane, f + s.w + g * kDecoderMaxSplits);
    if (lane == 0) f[s.inv + g] = inv;
  }
  __syncthreads();
  each_quad([&](int, int g, int c) {
    const float* all = a.partials + (first_pair + g) * a.splits * stride + 2 + c;
    const float* weight = f + s.w + g * kDecoderMaxSplits;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int q = 0; q < used; ++q) {
      const float w = weight[q];
      if (w == -1.0f) continue;
#pragma unroll
      for (int k = 0; k < 4; ++k) sum[k] += __ldcg(all + q * stride + k) * w;
    }
    const float inv = f[s.inv + g];
#pragma unroll
    for (int k = 0; k < 4; ++k) store_exact(out, g * d + c + k, sum[k] * inv, a.out.code);
  });
  if (tid == 0) *counter = 0;  // ready for the next launch
}

template <int kCode>
cudaError_t launch_as(const DecoderAttention& a, cudaStream_t stream) {
  const Layout s = layout_of(a.heads / a.kv_heads, a.head_dim, kCode);
  const std::size_t bytes = smem_bytes(s);
  if (bytes > 48 * 1024) {
    // Opted in only where needed (every call, so no static state: cheap next to the launch).
    const cudaError_t e =
        cudaFuncSetAttribute(attention_group_kernel<kCode>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.rows),
                  static_cast<unsigned>(a.splits > 1 ? a.splits : 1));
  return cuda_device::launch_chained(attention_group_kernel<kCode>, grid, kThreads, bytes, stream,
                                     a);
}

}  // namespace

bool decoder_attention_grouped_fits(const DecoderAttention& a) {
  const int code = a.cache.k.code;
  if (code != a.cache.v.code || code < kF32 || code > kF8) return false;
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) return false;
  const int group = a.heads / a.kv_heads;
  const int64_t elem = element_bytes(code);
  if (group > kMaxGroup || a.head_dim <= 0 || a.head_dim > kMaxHeadDim) return false;
  if ((a.head_dim * elem) % 16 != 0 || (a.cache.k.ld * elem) % 16 != 0 ||
      (a.cache.v.ld * elem) % 16 != 0 || !cuda_device::aligned16(a.cache.k.data) ||
      !cuda_device::aligned16(a.cache.v.data)) {
    return false;
  }
  if (code == kF8 && (a.cache.k_scale == nullptr || a.cache.v_scale == nullptr)) return false;
  // Tiles of f32 rows of 256 dimensions need 133 KB; every sm_80+ GPU has at least 163 KB.
  return smem_bytes(layout_of(group, a.head_dim, code)) <= 160 * 1024;
}

cudaError_t decoder_attention_grouped(const DecoderAttention& a, cudaStream_t stream) {
  if (a.rows == 0 || a.heads == 0) return cudaSuccess;
  if (!decoder_attention_grouped_fits(a) || a.rows > 65535 || a.splits > kDecoderMaxSplits ||
      (a.splits > 1 && (a.partials == nullptr || a.counters == nullptr))) {
    return cudaErrorInvalidValue;  // cuda_ops.cc checks these first, with messages
  }
  switch (a.cache.k.code) {
    case kF32:
      return launch_as<kF32>(a, stream);
    case kBF16:
      return launch_as<kBF16>(a, stream);
    case kF16:
      return launch_as<kF16>(a, stream);
    default:
      return launch_as<kF8>(a, stream);
  }
}

}  // namespace qlinear::cuda_launch
