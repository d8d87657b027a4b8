// Causal grouped-query attention for the decoder (model/ops.h) over the KV cache: one block per
// (query head, row), prefill and decode alike (decode is one row).
//
// Eight warps split the keys of a row's range [first, position] (the sliding window, if any,
// sets first): each warp takes runs of consecutive keys, its lanes holding head_dim / 32
// dimensions of q, of the accumulator and of each key row (lane-contiguous, so a key row is
// coalesced loads), a dot product being one butterfly reduction. A warp scores a run before its
// running max moves (the CPU ops do the same with blocks of 32), then the warps' (max, sum,
// accumulator) are merged through shared memory. Runs (walk_keys): a block's part of at most 16
// keys is one run of 2 keys per warp whose key and value rows are requested together (one memory
// round trip), a longer part runs of 4 keys whose values follow the scores (the same registers).
// In a decode forward (a.settled: model/ops.h AttentionShape::settled_history) the positions and
// every key but the newest are settled before this launch, so each warp requests its first run
// before it waits for the kernel before it (the RoPE and KV store, which writes the newest key,
// requested after the wait). H200, 8B W4A16 decode, one device call
// (bench/results/h200-attention-runs-2026-12-04): 393.5 against 373.2 tok/s at 128 positions,
// +0.5-1.6% at 2048-3968 and batch 16; runs of 2 everywhere were 2-3% slower at 3968. Everything is
// f32 as in the CPU ops, which it matches to ~1e-6 (summation order). An FP8 cache
// (model/kv_fp8.h): each lane holds consecutive dimensions (one word of codes, converted in pairs
// by the hardware's e4m3x2 -> f16x2), and a key's scale multiplies its dot product and a value's
// its softmax weight rather than every element (the CPU ops scale the elements: the same value up
// to f32 rounding). The first version decoded lane-strided bytes in software and scaled every
// element: 8B decode at 3968 positions ran 177.6 tok/s against 318.4 with a bf16 cache (H200,
// bench/results/h200-kvfp8-2026-12-03).
//
// Split over the keys (a.splits > 1, decode): a decode row alone is `heads` blocks, 32 for Llama-3
// 8B on 132 SMs, each walking every key. With splits S the grid gets a third dimension: the row's
// range (read from the device-side position, so one recorded launch serves every context length)
// is cut into parts of max(ceil(keys / S), a.min_split_keys) keys, block s takes part s (none
// past the last), writes its (max, sum, unnormalised accumulator) to a.partials, and the block
// that finishes last for its (row, head) (an atomic counter, reset by it) merges the used parts'
// partials in split order: deterministic, one launch, graph-capturable. Blocks past the used parts
// leave at once and are not counted; a row whose keys fill one part is written by that part's
// block directly, without the protocol. The floor on a part keeps
// short contexts from paying for S tiny parts (measured on the H200, 8B decode: S = 32 without
// it ran 230 tok/s at 128 positions against 267 with 9 parts, and 175 against 148 at 2048).
//
// decoder_attention_group.cu serves a whole query group per block where the cache's rows allow
// (the runner's usual case), decoder_attention_mma.cu prompt chunks over a bf16 cache on tensor
// cores; this kernel takes the rest.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_split.cuh"
#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::load_exact;
using cuda_device::store_exact;
using cuda_device::warp_sum;

constexpr int kWarps = 8;
constexpr int kLongRunKeys = 4;   // keys a warp scores before it rescales (long parts)
constexpr int kShortRunKeys = 2;  // keys and values a warp loads together (short parts)

// kCode: the caches' dtype code fixed at compile time (kF32 / kBF16 / kF16), or -1 to read it
// from the matrix. A runtime code made every key element's load a branch whose result was
// converted before the next load was issued: 32 serialised L2 round trips per warp and key run,
// ~20 us of a 22 us decode launch (H200, Llama-3 8B, Nsight Compute source counters).
template <int kCode>
__device__ __forceinline__ int code_of(const DecoderMatrix& m) {
  return kCode >= 0 ? kCode : m.code;
}

template <int kCode>
__device__ __forceinline__ const void* element_row(const DecoderMatrix& m, int64_t row,
                                                   int64_t col) {
  const int code = code_of<kCode>(m);
  const int64_t bytes = code == kF32 ? 4 : (code == kF8 ? 1 : 2);
  return static_cast<const char*>(m.data) + (row * m.ld + col) * bytes;
}

// The head dimension lane `lane` holds in its slot k: lane-strided (lane + 32 k), so that a key
// row of 16- or 32-bit elements is coalesced loads, or for an FP8 cache kPerLane consecutive ones
// (lane kPerLane + k), so that a lane's codes are one load and pairs of them one conversion.
template <int kPerLane, int kCode>
__device__ __forceinline__ int dim_of(int lane, int k) {
  return kCode == kF8 ? lane * kPerLane + k : lane + 32 * k;
}

// kPerLane e4m3 codes from `p` as f32 (exact through f16: cvt.rn.f16x2.e4m3x2 on sm_89+): the
// first `count` of them (the rest 0), from one aligned load when `vector` (the kernel's uniform
// check) and the lane's codes are whole, else byte by byte.
template <int kPerLane>
__device__ __forceinline__ void load_codes(const uint8_t* p, int count, bool vector,
                                           float (&out)[kPerLane]) {
  uint8_t bytes[kPerLane];
  if (kPerLane >= 4 && vector && count == kPerLane) {
#pragma unroll
    for (int w = 0; w < kPerLane / 4; ++w) {
      const uint32_t word = reinterpret_cast<const uint32_t*>(p)[w];
#pragma unroll
      for (int b = 0; b < 4; ++b) bytes[4 * w + b] = static_cast<uint8_t>(word >> (8 * b));
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) bytes[k] = k < count ? p[k] : 0;
  }
  if constexpr (kPerLane == 1) {
    out[0] = __half2float(__half(__nv_cvt_fp8_to_halfraw(bytes[0], __NV_E4M3)));
  } else {
#pragma unroll
    for (int k = 0; k < kPerLane; k += 2) {
      const auto pair = static_cast<__nv_fp8x2_storage_t>(bytes[k] | (bytes[k + 1] << 8));
      const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3)));
      out[k] = f.x;
      out[k + 1] = f.y;
    }
  }
}

// Lane `lane`'s kPerLane elements (dim_of) of kv head `kvh` at cache row `row`, as f32: an FP8
// cache's codes unscaled (the kernel applies the row's scale to the dot product and to the
// softmax weight instead: s (q . c) and (p s) c, two products per key instead of head_dim).
template <int kPerLane, int kCode>
__device__ __forceinline__ void load_head(const DecoderMatrix& m, int64_t row, int kvh, int d,
                                          int lane, bool vector, float (&out)[kPerLane]) {
  const void* head = element_row<kCode>(m, row, static_cast<int64_t>(kvh) * d);
  if constexpr (kCode == kF8) {
    if (lane * kPerLane < d) {
      load_codes<kPerLane>(static_cast<const uint8_t*>(head) + lane * kPerLane,
                           min(kPerLane, d - lane * kPerLane), vector, out);
    } else {
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) out[k] = 0.0f;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = dim_of<kPerLane, kCode>(lane, k);
      out[k] = i < d ? load_exact(head, i, code_of<kCode>(m)) : 0.0f;
    }
  }
}

// One block's walk over its keys [first, end] of kv head kvh: each warp takes runs of kKeys
// consecutive keys (warp w the runs at first + w kKeys + i kWarps kKeys), scores a run before its
// running max moves, and leaves (max, sum, unnormalised accumulator) for the block's merge.
// kTogether: a run's key and value rows are requested together (one round trip per run), else the
// values after the scores (two, but twice the keys per run in the same registers). `early` (the
// kernel's choice, with a settled history): the kernel has not waited for the kernel before yet,
// so the warp's first run is requested first (all but the newest key, which that kernel writes),
// then the wait, then the newest key and q.
struct KeyWalk {
  int64_t base;  // row t's sequence's position 0 among the cache rows
  int first, end, last, kvh, d, lane, warp;
  bool vector;  // an FP8 cache's codes load as words
};

template <int kPerLane, int kCode, int kKeys, bool kTogether>
__device__ __forceinline__ void walk_keys(const DecoderAttention& a, const KeyWalk& w, bool early,
                                          const float* qrow, float (&acc)[kPerLane],
                                          float& running_max, float& running_sum) {
  float kr[kKeys][kPerLane];
  float vr[kTogether ? kKeys : 1][kPerLane];
  float key_scale[kKeys];  // an FP8 cache's scales of these keys (1 otherwise)
  float value_scale[kKeys];
  auto row_of = [&](int b, int j0) { return w.base + min(j0 + b, w.end); };
  auto load_key = [&](int b, int j0) {
    const int64_t row = row_of(b, j0);
    key_scale[b] = kCode == kF8 ? a.cache.k_scale[row * a.cache.scale_ld + w.kvh] : 1.0f;
    value_scale[b] = kCode == kF8 ? a.cache.v_scale[row * a.cache.scale_ld + w.kvh] : 1.0f;
    load_head<kPerLane, kCode>(a.cache.k, row, w.kvh, w.d, w.lane, w.vector, kr[b]);
    if constexpr (kTogether) {
      load_head<kPerLane, kCode>(a.cache.v, row, w.kvh, w.d, w.lane, w.vector, vr[b]);
    }
  };
  // Keys past `end` load key `end` again (no branch, the run's loads in flight together) and score
  // -inf.
  auto newest = [&](int b, int j0) { return early && min(j0 + b, w.end) == w.last; };
  int j0 = w.first + w.warp * kKeys;
  if (j0 <= w.end) {
#pragma unroll
    for (int b = 0; b < kKeys; ++b) {
      if (!newest(b, j0)) load_key(b, j0);
    }
  }
  if (early) {
    cuda_device::wait_for_prior_grids();
    if (j0 <= w.end) {
#pragma unroll
      for (int b = 0; b < kKeys; ++b) {
        if (newest(b, j0)) load_key(b, j0);
      }
    }
  }
  float q[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int i = dim_of<kPerLane, kCode>(w.lane, k);
    q[k] = i < w.d ? qrow[i] : 0.0f;
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(w.d));
  while (j0 <= w.end) {
    float score[kKeys];
    float block_max = running_max;
#pragma unroll
    for (int b = 0; b < kKeys; ++b) {
      float dot = 0.0f;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) dot = fmaf(q[k], kr[b][k], dot);
      if constexpr (kCode == kF8)
        dot = warp_sum(dot) * key_scale[b];
      else
        dot = warp_sum(dot);
      score[b] = j0 + b <= w.end ? dot * scale : -INFINITY;
      block_max = fmaxf(block_max, score[b]);
    }
    const float correction = expf(running_max - block_max);
    running_sum *= correction;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) acc[k] *= correction;
    running_max = block_max;
    if constexpr (!kTogether) {
      // The values into the keys' registers, now free.
#pragma unroll
      for (int b = 0; b < kKeys; ++b) {
        load_head<kPerLane, kCode>(a.cache.v, row_of(b, j0), w.kvh, w.d, w.lane, w.vector, kr[b]);
      }
    }
#pragma unroll
    for (int b = 0; b < kKeys; ++b) {
      if (j0 + b > w.end) continue;  // the same for the whole warp
      const float p = expf(score[b] - running_max);
      running_sum += p;
      const float weight = kCode == kF8 ? p * value_scale[b] : p;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        acc[k] = fmaf(weight, kTogether ? vr[b][k] : kr[b][k], acc[k]);
      }
    }
    j0 += kWarps * kKeys;
    if (j0 <= w.end) {
#pragma unroll
      for (int b = 0; b < kKeys; ++b) load_key(b, j0);
    }
  }
}

// kPerLane: dimensions per lane, head_dim <= 32 * kPerLane; kCode: the caches' dtype (above).
template <int kPerLane, int kCode>
__global__ void __launch_bounds__(kWarps * 32) attention_kernel(DecoderAttention a) {
  __shared__ float warp_max[kWarps];
  __shared__ float warp_sum_of[kWarps];
  __shared__ float warp_acc[kWarps][kDecoderMaxHeadDim];
  // Settled (decode): the positions and the keys before the newest are read before the wait.
  // Heads of more than 128 dimensions wait first (the early requests cost them 10-20 registers,
  // a block per SM).
  const bool early = kPerLane <= 4 && a.settled;
  cuda_device::allow_next_grid();
  if (!early) cuda_device::wait_for_prior_grids();
  const int h = static_cast<int>(blockIdx.x);
  const int64_t t = blockIdx.y;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int d = a.head_dim;
  const int kvh = h / (a.heads / a.kv_heads);
  const int last = a.positions[t];
  const int64_t o_bytes = a.out.code == kF32 ? 4 : 2;
  void* out =
      static_cast<char*>(a.out.data) + (t * a.out.ld + static_cast<int64_t>(h) * d) * o_bytes;
  if (last < 0 || last >= a.cache.capacity) {
    cuda_device::wait_for_prior_grids();  // out is read by the kernels before
    for (int i = static_cast<int>(threadIdx.x); i < d; i += kWarps * 32) {
      store_exact(out, i, NAN, a.out.code);
    }
    return;
  }
  int first = a.window > 0 ? max(0, last - a.window + 1) : 0;
  // Row t's sequence's position 0 among the cache rows.
  const int64_t base = cuda_device::cache_row(a.cache, t, 0);
  int end = last;  // this block's keys: [first, end]
  const int split = static_cast<int>(blockIdx.z);
  int used = 1;  // parts holding keys (the same in every block of the row and head)
  if (a.splits > 1) {
    const int keys = last - first + 1;
    const int chunk = max((keys + a.splits - 1) / a.splits, max(a.min_split_keys, 1));
    used = (keys + chunk - 1) / chunk;
    // Blocks past the used parts have no keys: they leave at once and are not counted (at 128
    // positions 25 of Llama-3 8B's 33 blocks per head, which used to run the whole publish and
    // count protocol for nothing).
    if (split >= used) return;
    first += split * chunk;
    end = min(last, first + chunk - 1);
  }
  // An FP8 cache's lanes load their kPerLane codes as words when every head starts aligned.
  const bool vector =
      kCode == kF8 && kPerLane >= 4 &&
      ((reinterpret_cast<uintptr_t>(a.cache.k.data) | reinterpret_cast<uintptr_t>(a.cache.v.data) |
        static_cast<uintptr_t>(a.cache.k.ld) | static_cast<uintptr_t>(a.cache.v.ld) |
        static_cast<uintptr_t>(d)) %
           4 ==
       0);
  const KeyWalk walk{base, first, end, last, kvh, d, lane, warp, vector};
  const float* qrow =
      static_cast<const float*>(a.q.data) + t * a.q.ld + static_cast<int64_t>(h) * d;
  float acc[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) acc[k] = 0.0f;
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  // Parts of at most 16 keys (decode contexts up to ~500 positions at the default split): one run
  // of 2 keys per warp, keys and values in one round trip. Longer ones: runs of 4, the values
  // after the scores (runs of 2 with both together measured 2-3% slower at 3968 positions). Heads
  // of more than 128 dimensions keep the runs of 4 (both forms in one kernel cost them registers).
  if (kPerLane <= 4 && end - first + 1 <= min(a.short_part_keys, kWarps * kShortRunKeys)) {
    walk_keys<kPerLane, kCode, kShortRunKeys, true>(a, walk, early, qrow, acc, running_max,
                                                    running_sum);
  } else {
    walk_keys<kPerLane, kCode, kLongRunKeys, false>(a, walk, early, qrow, acc, running_max,
                                                    running_sum);
  }
  // Merge the warps: a warp that saw no key has max -inf and weighs 0.
  if (lane == 0) {
    warp_max[warp] = running_max;
    warp_sum_of[warp] = running_sum;
  }
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int i = dim_of<kPerLane, kCode>(lane, k);
    if (i < d) warp_acc[warp][i] = acc[k];
  }
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m = fmaxf(m, warp_max[w]);
  float total = 0.0f;
  float weight[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = warp_max[w] == -INFINITY ? 0.0f : expf(warp_max[w] - m);
    total += warp_sum_of[w] * weight[w];
  }
  // The block's accumulator of dimension i, relative to its max m (unnormalised).
  auto block_acc = [&](int i) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][i] * weight[w];
    return sum;
  };
  // One part (no split, or a context short enough for one): the block's result is the row's.
  if (used == 1) {
    const float inv = 1.0f / total;
    for (int i = static_cast<int>(threadIdx.x); i < d; i += kWarps * 32) {
      store_exact(out, i, block_acc(i) * inv, a.out.code);
    }
    return;
  }
  // This part's partial: [max, sum, accumulator[d]].
  const int64_t pair = t * a.heads + h;
  const int64_t stride = d + 2;
  float* mine = a.partials + (pair * a.splits + split) * stride;
  if (threadIdx.x == 0) {
    mine[0] = m;
    mine[1] = total;
  }
  for (int i = static_cast<int>(threadIdx.x); i < d; i += kWarps * 32) mine[2 + i] = block_acc(i);
  // Publish it, then count; the last of the used parts' blocks merges (and resets the counter).
  __threadfence();
  __syncthreads();
  __shared__ bool merge;
  if (threadIdx.x == 0) merge = atomicAdd(a.counters + pair, 1) == used - 1;
  __syncthreads();
  if (!merge) return;
  __threadfence();
  // The parts' weights exp(m_q - max) and 1 / sum_q l_q w_q, once for the block: warp 0's lane
  // q holds parts q and q + 32, their loads in flight together, the max and the sum taken by
  // butterflies (a fixed order, so the merge stays deterministic). A part whose max is -inf is
  // left out (weight -1). (Thread 0 alone walking the parts paid one L2 round trip per part and
  // step: ~20 of the kernel's 25 us at 16 parts, H200.)
  __shared__ float part_weight[kDecoderMaxSplits];
  __shared__ float part_inv;
  const float* all = a.partials + pair * a.splits * stride;
  if (warp == 0) {
    const float inv = cuda_device::split_part_weights(all, stride, used, lane, part_weight);
    if (lane == 0) part_inv = inv;
  }
  __syncthreads();
  // Each output element sums the parts in order, kBatch loads in flight at a time.
  constexpr int kBatch = 8;
  for (int i = static_cast<int>(threadIdx.x); i < d; i += kWarps * 32) {
    float sum = 0.0f;
    for (int q0 = 0; q0 < used; q0 += kBatch) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int q = q0 + u;
        v[u] = q < used && part_weight[q] != -1.0f ? __ldcg(all + q * stride + 2 + i) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int q = q0 + u;
        if (q < used && part_weight[q] != -1.0f) sum += v[u] * part_weight[q];
      }
    }
    store_exact(out, i, sum * part_inv, a.out.code);
  }
  if (threadIdx.x == 0) a.counters[pair] = 0;  // ready for the next launch
}

template <int kPerLane, int kCode>
cudaError_t launch_as(const DecoderAttention& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.heads), static_cast<unsigned>(a.rows),
                  static_cast<unsigned>(a.splits > 1 ? a.splits : 1));
  return cuda_device::launch_chained(attention_kernel<kPerLane, kCode>, grid, kWarps * 32, 0,
                                     stream, a);
}

// Caches of one dtype get their kernel; mixed ones read the codes at run time.
template <int kPerLane>
cudaError_t launch(const DecoderAttention& a, cudaStream_t stream) {
  const int code = a.cache.k.code;
  if (code == a.cache.v.code) {
    if (code == kF32) return launch_as<kPerLane, kF32>(a, stream);
    if (code == kBF16) return launch_as<kPerLane, kBF16>(a, stream);
    if (code == kF16) return launch_as<kPerLane, kF16>(a, stream);
    if (code == kF8) return launch_as<kPerLane, kF8>(a, stream);
  }
  if (code == kF8 || a.cache.v.code == kF8) return cudaErrorInvalidValue;  // FP8 is k and v
  return launch_as<kPerLane, -1>(a, stream);
}

}  // namespace

cudaError_t decoder_attention(const DecoderAttention& a, cudaStream_t stream) {
  if (a.mma) return decoder_attention_mma(a, stream);
  if (a.grouped) return decoder_attention_grouped(a, stream);
  if (a.rows == 0 || a.heads == 0) return cudaSuccess;
  if (a.head_dim <= 0 || a.head_dim > kDecoderMaxHeadDim || a.kv_heads <= 0 ||
      a.heads % a.kv_heads != 0 || a.rows > 65535 || a.splits > kDecoderMaxSplits ||
      (a.splits > 1 && (a.partials == nullptr || a.counters == nullptr)) ||
      (a.cache.k.code == kF8 && (a.cache.k_scale == nullptr || a.cache.v_scale == nullptr))) {
    return cudaErrorInvalidValue;  // cuda_ops.cc checks these first, with messages
  }
  if (a.head_dim <= 32) return launch<1>(a, stream);
  if (a.head_dim <= 64) return launch<2>(a, stream);
  if (a.head_dim <= 128) return launch<4>(a, stream);
  if (a.head_dim <= 256) return launch<8>(a, stream);
  return launch<16>(a, stream);
}

}  // namespace qlinear::cuda_launch
