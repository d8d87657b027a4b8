// Causal grouped-query attention on tensor cores, for prompt chunks (many rows of a sequence) over
// a bf16 KV cache: flash-attention-style tiling with mma.sync m16n8k16 (bf16 in, f32 out).
//
// One block of 4 warps per (tile of 64 query rows of one sequence, query head); each warp owns 16
// rows. Key and value tiles of 64 rows stream through shared memory by cp.async, two in flight.
// Per tile a warp computes its 16 x 64 scores S = Q K^T with the keys as the B operand
// (ldmatrix of the key rows), applies the causal / window mask, updates its rows' online softmax
// (each thread holds two rows' running max and partial sum, a row shared by 4 lanes) and adds
// P V with the scores' accumulator fragments reused as the A operand (ldmatrix.trans of the value
// rows as B). The output is divided by the sum at the end and stored in the output's dtype.
//
// Numerics: the decoder's other attention kernels and the CPU ops work in f32. Rounding q and the
// softmax weights p to bf16 would cost ~3 significant digits, so each is split into two bf16
// terms, x = hi + lo with hi = bf16(x) and lo = bf16(x - hi) (~16 bits of mantissa together),
// and both go through the tensor cores: S = Qhi K + Qlo K, O += Phi V + Plo V. The keys and
// values are the cache's bf16 values exactly, the products exact in f32, so the result matches
// the f32 kernels to ~1e-5 relative (summation order and the 2^-17 of the split aside), at twice
// the mma work of one bf16 term (not measured separately). Why tensor cores at all: the grouped
// f32 kernel (decoder_attention_group.cu) reads each key tile once per query row, so a prompt of
// T tokens reads the cache T^2 / 2 times and does T^2 d f32 FMAs per head; at 3968 tokens it was
// at least 73% of an 8B prefill (H100: 7220 tok/s with it, 26655 with this kernel;
// bench/results/h100-prefill-attention-2026-12-07).
//
// Masking: query row r sees keys [first_r, last_r] (last_r its position, first_r from the
// window). The block walks [min first, max last] of its rows. Keys in that range that no row of
// the block attends (only when the rows' ranges leave a gap: positions that are not one run)
// are not loaded (zero-filled), so a NaN in a cache row nobody reads cannot reach an output as
// 0 * NaN. A row whose position is outside the cache gets NaN, as in the other kernels.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/mma_sm80.cuh"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::bf16x2_pack;
using cuda_device::cp_async16;
using cuda_device::cp_async_commit;
using cuda_device::cp_async_wait;
using cuda_device::mma;
using cuda_device::store_exact;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kKeys = 64;           // key rows per tile
constexpr int kStages = 2;

// Shared memory rows of kD bf16 in 16-byte vectors, padded to an odd count so that the 8 row
// addresses of one ldmatrix matrix fall in 8 distinct groups of 4 banks.
template <int kD>
struct Tiles {
  static constexpr int kChunks = kD / 8;
  static constexpr int kStride = kChunks + 1;
  static constexpr int kQ = kRows * kStride;  // vectors of one q array (hi or lo)
  static constexpr int kKv = kKeys * kStride;
  static constexpr int kVectors = 2 * kQ + kStages * 2 * kKv;
  // After the vectors: per row first and last key (ints), and per tile key a "some row reads it"
  // flag (only used when the rows' ranges leave a gap).
  static constexpr std::size_t kBytes = std::size_t{kVectors} * 16 + 2 * kRows * 4 + kKeys * 4;
};

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

// x as bf16 hi + lo, packed in pairs (the first value in the low half, as the fragments want).
__device__ __forceinline__ void split_pair(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat16 h0 = __float2bfloat16_rn(x0);
  const __nv_bfloat16 h1 = __float2bfloat16_rn(x1);
  hi = bf16x2_pack(__bfloat162float(h0), __bfloat162float(h1));
  lo = bf16x2_pack(x0 - __bfloat162float(h0), x1 - __bfloat162float(h1));
}

// The rows this block serves: [t0, t1) of the call, all of one sequence.
struct RowTile {
  int64_t t0;
  int64_t t1;
};

__device__ __forceinline__ RowTile row_tile(const DecoderAttention& a) {
  // Heavier tiles (later rows see more keys) first: blockIdx.x counts from the end.
  const int64_t tile = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x);
  if (a.cache.sequence_rows <= 0) {
    const int64_t t0 = tile * kRows;
    return {t0, min(t0 + kRows, a.rows)};
  }
  const int64_t per_sequence = (a.cache.sequence_rows + kRows - 1) / kRows;
  const int64_t sequence = tile / per_sequence;
  const int64_t t0 = sequence * a.cache.sequence_rows + (tile % per_sequence) * kRows;
  const int64_t end = min((sequence + 1) * a.cache.sequence_rows, a.rows);
  return {t0, min(t0 + kRows, end)};
}

template <int kD>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(DecoderAttention a) {
  using T = Tiles<kD>;
  extern __shared__ uint4 smem[];
  uint4* q_hi = smem;
  uint4* q_lo = q_hi + T::kQ;
  uint4* kv = q_lo + T::kQ;  // stage s: keys at kv + 2 s kKv, values after them
  int* first_of = reinterpret_cast<int*>(smem + T::kVectors);
  int* last_of = first_of + kRows;
  int* read_by_some = last_of + kRows;
  __shared__ int range_lo, range_hi, gapless;

  cuda_device::chain_begin();  // q, the positions and the cache rows come from the kernels before
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int head = static_cast<int>(blockIdx.y);
  const int kv_head = head / (a.heads / a.kv_heads);
  const RowTile rows = row_tile(a);
  const int n_rows = static_cast<int>(rows.t1 - rows.t0);
  const int64_t base = cuda_device::cache_row(a.cache, rows.t0, 0);

  // Each row's key range; an empty one (first > last) for rows past the tile or outside the cache.
  if (tid == 0) {
    range_lo = INT_MAX;
    range_hi = -1;
    gapless = 1;
  }
  __syncthreads();
  if (tid < kRows) {
    int first = INT_MAX;
    int last = -1;
    if (tid < n_rows) {
      const int p = a.positions[rows.t0 + tid];
      if (p >= 0 && p < a.cache.capacity) {
        last = p;
        first = a.window > 0 ? max(0, p - a.window + 1) : 0;
      }
    }
    first_of[tid] = first;
    last_of[tid] = last;
    if (last >= 0) {
      atomicMin(&range_lo, first);
      atomicMax(&range_hi, last);
    }
  }
  __syncthreads();
  // The union of the ranges is one run when every range but those starting at the lowest key
  // starts inside or right after a range that starts before it.
  if (tid < kRows && last_of[tid] >= 0 && first_of[tid] > range_lo) {
    bool joined = false;
    for (int r = 0; r < kRows && !joined; ++r) {
      joined = last_of[r] >= 0 && first_of[r] < first_of[tid] && first_of[tid] <= last_of[r] + 1;
    }
    if (!joined) gapless = 0;
  }

  // q rows of this head as bf16 hi and lo parts (zeros past the tile).
  const float* q = static_cast<const float*>(a.q.data);
  for (int i = tid; i < kRows * (kD / 2); i += kThreads) {
    const int r = i / (kD / 2);
    const int c = 2 * (i % (kD / 2));
    float x0 = 0.0f;
    float x1 = 0.0f;
    if (r < n_rows) {
      const float* row = q + (rows.t0 + r) * a.q.ld + static_cast<int64_t>(head) * kD;
      x0 = row[c];
      x1 = row[c + 1];
    }
    uint32_t hi, lo;
    split_pair(x0, x1, hi, lo);
    reinterpret_cast<uint32_t*>(q_hi + r * T::kStride)[c / 2] = hi;
    reinterpret_cast<uint32_t*>(q_lo + r * T::kStride)[c / 2] = lo;
  }
  __syncthreads();
  const int lo_key = range_lo;
  const int hi_key = range_hi;
  const bool all_read = gapless != 0;
  const int tiles = hi_key >= lo_key ? (hi_key - lo_key) / kKeys + 1 : 0;

  // Requests tile `tile`'s key and value rows into stage `stage` (rows past the range or read by
  // no row zero-filled) as one commit group.
  const __nv_bfloat16* k_cache = static_cast<const __nv_bfloat16*>(a.cache.k.data);
  const __nv_bfloat16* v_cache = static_cast<const __nv_bfloat16*>(a.cache.v.data);
  auto issue = [&](int tile, int stage) {
    const int j0 = lo_key + tile * kKeys;
    if (!all_read) {
      __syncthreads();  // the flags of the tile before are read
      if (tid < kKeys) {
        bool read = false;
        for (int r = 0; r < kRows && !read; ++r) {
          read = first_of[r] <= j0 + tid && j0 + tid <= last_of[r];
        }
        read_by_some[tid] = read ? 1 : 0;
      }
      __syncthreads();
    }
    uint4* k_tile = kv + stage * 2 * T::kKv;
    uint4* v_tile = k_tile + T::kKv;
    for (int i = tid; i < kKeys * T::kChunks; i += kThreads) {
      const int r = i / T::kChunks;
      const int c = i % T::kChunks;
      const int j = j0 + r;
      const bool load = j <= hi_key && (all_read || read_by_some[r] != 0);
      const int64_t row = base + (load ? j : lo_key);
      const int64_t column = static_cast<int64_t>(kv_head) * kD + 8 * c;
      cp_async16(k_tile + r * T::kStride + c, k_cache + row * a.cache.k.ld + column, load);
      cp_async16(v_tile + r * T::kStride + c, v_cache + row * a.cache.v.ld + column, load);
    }
    cp_async_commit();
  };

  // This thread's two rows of the warp's 16 (fragment rows g and g + 8) and its key columns.
  const int g = lane / 4;
  const int quad = lane % 4;
  const int row0 = 16 * warp + g;
  const int row1 = row0 + 8;
  const int first0 = first_of[row0];
  const int last0 = last_of[row0];
  const int first1 = first_of[row1];
  const int last1 = last_of[row1];
  const float scale = 1.0f / sqrtf(static_cast<float>(kD));

  float out[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) out[n][0] = out[n][1] = out[n][2] = out[n][3] = 0.0f;
  float max0 = -INFINITY;
  float max1 = -INFINITY;
  float sum0 = 0.0f;  // this lane's part of the row's sum
  float sum1 = 0.0f;

  // ldmatrix row addresses: q (A operand: matrices rows 0-7 / 8-15 x columns 0-7 / 8-15), keys
  // (B: keys 0-7 / 8-15 x dimensions 0-7 / 8-15), values (B transposed: keys 0-7 / 8-15 x
  // dimensions 0-7 / 8-15 of two 8-column output tiles).
  const int a_row = 16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int a_col = (lane >> 4) * 8;
  const int k_row = (lane & 7) + (lane >> 4) * 8;
  const int k_col = ((lane >> 3) & 1) * 8;
  const int v_row = (lane & 7) + ((lane >> 3) & 1) * 8;
  const int v_col = (lane >> 4) * 8;
  const auto* qh = reinterpret_cast<const __nv_bfloat16*>(q_hi + a_row * T::kStride) + a_col;
  const auto* ql = reinterpret_cast<const __nv_bfloat16*>(q_lo + a_row * T::kStride) + a_col;

  if (tiles > 0) issue(0, 0);
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile % kStages;
    if (tile + 1 < tiles) {
      issue(tile + 1, (tile + 1) % kStages);  // its stage was last read by tile - 1
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint4* k_tile = kv + stage * 2 * T::kKv;
    const uint4* v_tile = k_tile + T::kKv;
    const int j0 = lo_key + tile * kKeys;

    // S = (Qhi + Qlo) K^T over the tile's 64 keys: 8 tiles of 8 keys.
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < kD / 16; ++kc) {
      uint32_t ah[4], al[4];
      ldmatrix_x4(ah, qh + 16 * kc);
      ldmatrix_x4(al, ql + 16 * kc);
#pragma unroll
      for (int n2 = 0; n2 < kKeys / 16; ++n2) {
        uint32_t b[4];
        ldmatrix_x4(
            b, reinterpret_cast<const __nv_bfloat16*>(k_tile + (16 * n2 + k_row) * T::kStride) +
                   16 * kc + k_col);
        mma<true>(s[2 * n2], ah, b[0], b[1]);
        mma<true>(s[2 * n2], al, b[0], b[1]);
        mma<true>(s[2 * n2 + 1], ah, b[2], b[3]);
        mma<true>(s[2 * n2 + 1], al, b[2], b[3]);
      }
    }
    // Mask and scale; the tile's maximum of each row (over the row's 4 lanes).
    float tile_max0 = -INFINITY;
    float tile_max1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = j0 + 8 * n + 2 * quad + e;
        s[n][e] = first0 <= j && j <= last0 ? s[n][e] * scale : -INFINITY;
        s[n][2 + e] = first1 <= j && j <= last1 ? s[n][2 + e] * scale : -INFINITY;
        tile_max0 = fmaxf(tile_max0, s[n][e]);
        tile_max1 = fmaxf(tile_max1, s[n][2 + e]);
      }
    }
#pragma unroll
    for (int o = 1; o < 4; o <<= 1) {
      tile_max0 = fmaxf(tile_max0, __shfl_xor_sync(0xffffffffu, tile_max0, o));
      tile_max1 = fmaxf(tile_max1, __shfl_xor_sync(0xffffffffu, tile_max1, o));
    }
    const float new0 = fmaxf(max0, tile_max0);
    const float new1 = fmaxf(max1, tile_max1);
    // A row with no key yet keeps max -inf: its weights are 0 and nothing is rescaled.
    const float keep0 = new0 == -INFINITY ? 1.0f : expf(max0 - new0);
    const float keep1 = new1 == -INFINITY ? 1.0f : expf(max1 - new1);
    max0 = new0;
    max1 = new1;
    sum0 *= keep0;
    sum1 *= keep1;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      out[n][0] *= keep0;
      out[n][1] *= keep0;
      out[n][2] *= keep1;
      out[n][3] *= keep1;
    }
    // P = exp(S - max), summed, then O += (Phi + Plo) V per 16 keys.
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      uint32_t ph[4], pl[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float* c = s[2 * kc + half];
        const float p0 = new0 == -INFINITY ? 0.0f : expf(c[0] - new0);
        const float p1 = new0 == -INFINITY ? 0.0f : expf(c[1] - new0);
        const float p2 = new1 == -INFINITY ? 0.0f : expf(c[2] - new1);
        const float p3 = new1 == -INFINITY ? 0.0f : expf(c[3] - new1);
        sum0 += p0 + p1;
        sum1 += p2 + p3;
        split_pair(p0, p1, ph[2 * half], pl[2 * half]);
        split_pair(p2, p3, ph[2 * half + 1], pl[2 * half + 1]);
      }
#pragma unroll
      for (int n2 = 0; n2 < kD / 16; ++n2) {
        uint32_t b[4];
        ldmatrix_x4_trans(
            b, reinterpret_cast<const __nv_bfloat16*>(v_tile + (16 * kc + v_row) * T::kStride) +
                   16 * n2 + v_col);
        mma<true>(out[2 * n2], ph, b[0], b[1]);
        mma<true>(out[2 * n2], pl, b[0], b[1]);
        mma<true>(out[2 * n2 + 1], ph, b[2], b[3]);
        mma<true>(out[2 * n2 + 1], pl, b[2], b[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the issue two tiles on
  }

#pragma unroll
  for (int o = 1; o < 4; o <<= 1) {
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, o);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, o);
  }
  const int64_t o_bytes = a.out.code == kF32 ? 4 : 2;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? row0 : row1;
    if (r >= n_rows) continue;
    const bool valid = (half == 0 ? last0 : last1) >= 0;
    const float inv = 1.0f / (half == 0 ? sum0 : sum1);
    void* row = static_cast<char*>(a.out.data) +
                ((rows.t0 + r) * a.out.ld + static_cast<int64_t>(head) * kD) * o_bytes;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        store_exact(row, 8 * n + 2 * quad + e, valid ? out[n][2 * half + e] * inv : NAN,
                    a.out.code);
      }
    }
  }
}

template <int kD>
cudaError_t launch_as(const DecoderAttention& a, cudaStream_t stream) {
  constexpr std::size_t bytes = Tiles<kD>::kBytes;
  const cudaError_t e =
      cudaFuncSetAttribute(attention_mma_kernel<kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  int64_t tiles = (a.rows + kRows - 1) / kRows;
  if (a.cache.sequence_rows > 0) {
    const int64_t sequences = (a.rows + a.cache.sequence_rows - 1) / a.cache.sequence_rows;
    tiles = sequences * ((a.cache.sequence_rows + kRows - 1) / kRows);
  }
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(a.heads));
  return cuda_device::launch_chained(attention_mma_kernel<kD>, grid, kThreads, bytes, stream, a);
}

}  // namespace

bool decoder_attention_mma_fits(const DecoderAttention& a) {
  if (a.cache.k.code != kBF16 || a.cache.v.code != kBF16 || a.q.code != kF32) return false;
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0 || a.splits > 1) return false;
  if (a.head_dim != 32 && a.head_dim != 64 && a.head_dim != 128) return false;
  // 16-byte rows for cp.async: the leading dimensions and pointers (head offsets are 64 bytes).
  return a.cache.k.ld % 8 == 0 && a.cache.v.ld % 8 == 0 && cuda_device::aligned16(a.cache.k.data) &&
         cuda_device::aligned16(a.cache.v.data) && a.rows <= 65535 * static_cast<int64_t>(kRows);
}

cudaError_t decoder_attention_mma(const DecoderAttention& a, cudaStream_t stream) {
  if (a.rows == 0 || a.heads == 0) return cudaSuccess;
  if (!decoder_attention_mma_fits(a)) return cudaErrorInvalidValue;  // cuda_ops.cc checks first
  switch (a.head_dim) {
    case 32:
      return launch_as<32>(a, stream);
    case 64:
      return launch_as<64>(a, stream);
    default:
      return launch_as<128>(a, stream);
  }
}

}  // namespace qlinear::cuda_launch
