// Device code of the int decode kernel cuda.int.gemv.sm80 (W4A16 / W8A16, M <= 16).
//
// The problem is computed transposed, y^T = W x^T, so that the weights are the A operand of
// mma.m16n8k16 (16 output columns per warp) and the M <= 8 (or 16) rows of x are B (one or two n8
// tiles): no tensor-core lane works on padding rows of weights, and each warp streams its own
// 16-column tile of codes with 16-byte loads.
//
// Layout after prepare: the codes are wo_mma.cu's repacked form (wo_repack: per 16-column tile
// and 64 (4-bit) or 32 (8-bit) K rows, one 16-byte vector per lane; the B-fragment order of two
// n8 tiles there is exactly the A-fragment order of one m16 tile here, rows g and g + 8 of the
// fragment being columns g and g + 8 of the tile), with N padded to 16 and K to 64. A lane's x
// for a 32-row half of a step is the 8 consecutive elements at row 8t of the half (one 16-byte
// load per x row, straight from global memory: x is small and shared by every warp, so it stays
// in L1 / L2). Scales [tiles][groups][8] pairs (column g, column g + 8) as f16 when exact, else
// f32; zero points the same as u8 pairs.
//
// Run: warp = one 16-column tile x a slice of K (whole 64-row steps); a block holds `tpb` tiles x
// `wk` slices. Two ways to stream the codes (GemvPipe):
// - the register pipelines (int_gemv_kernel; 8-bit codes): each warp issues the code loads of
//   kUnroll steps at once (ld.global.nc, L1::no_allocate) plus their scales and zero points, then
//   per 32-row half dequantizes in registers (magic-number f16 / bf16 conversion, the zero point
//   subtracted exactly), runs two mma per n8 tile into a fresh f32 fragment and adds it times the
//   half's scale to the accumulator (every power-of-two group size >= 32 and channelwise take that
//   one path);
// - the cp.async ring (int_gemv_ring_kernel; 4-bit codes): the codes pass through a per-warp ring
//   in shared memory and are dequantized with the offset left in (code4_offset below).
// Slices of one tile are reduced through shared memory in a fixed order (deterministic, no
// workspace, one launch).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/mma_sm80.cuh"

namespace qlinear::cuda_launch {
namespace {

constexpr int kMaxWarps = kGemvMaxWarps;

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

using cuda_device::bf16x2_pack;
using cuda_device::bf16x2_sub;
using cuda_device::cp_async16;
using cuda_device::cp_async_commit;
using cuda_device::cp_async_wait;
using cuda_device::f16x2_fma;
using cuda_device::f16x2_sub;
using cuda_device::mma;

// The dequantization constants of one fragment row (a weight column) for zero point z.
struct Zc {
  uint32_t sub;  // f16: (1024 + z) pairs; bf16 4-bit: (128 + z) pairs; bf16 8-bit: f32 2^23 + z
  uint32_t fma;  // f16 4-bit: -(64 + z) pairs (the high nibble arrives times 16)
};

// Integer arithmetic only (z < 2^bits): f16 1024 + z is 0x6400 + z, -(64 + z) is 0xD400 + 16 z;
// bf16 128 + z (4-bit) is 0x4300 + z; f32 2^23 + z is 0x4B000000 + z.
template <int kCode, bool kBf16>
__device__ __forceinline__ Zc zero_consts(uint32_t z) {
  Zc c{0, 0};
  if constexpr (!kBf16) {
    c.sub = (0x6400u + z) * 0x10001u;
    if constexpr (kCode == kU4) c.fma = (0xD400u + (z << 4)) * 0x10001u;
  } else if constexpr (kCode == kU4) {
    c.sub = (0x4300u + z) * 0x10001u;
  } else {
    c.sub = 0x4B000000u + z;
  }
  return c;
}

// One 4-bit word -> the A fragment of one k16 step: a0 (column g, k 2t..), a1 (column g + 8),
// a2 (column g, k 2t + 8..), a3 (column g + 8, k 2t + 8..). zg / zh: columns g / g + 8.
template <bool kBf16>
__device__ __forceinline__ void dequant4(uint32_t q, const Zc& zg, const Zc& zh, uint32_t (&a)[4]) {
  if constexpr (!kBf16) {
    const uint32_t magic = 0x64006400u;
    const uint32_t sixteenth = 0x2C002C00u;
    const uint32_t q8 = q >> 8;
    a[0] = f16x2_sub((q & 0x000F000Fu) | magic, zg.sub);
    a[1] = f16x2_fma((q & 0x00F000F0u) | magic, sixteenth, zh.fma);
    a[2] = f16x2_sub((q8 & 0x000F000Fu) | magic, zg.sub);
    a[3] = f16x2_fma((q8 & 0x00F000F0u) | magic, sixteenth, zh.fma);
  } else {
    const uint32_t magic = 0x43004300u;
    a[0] = bf16x2_sub((q & 0x000F000Fu) | magic, zg.sub);
    a[1] = bf16x2_sub(((q >> 4) & 0x000F000Fu) | magic, zh.sub);
    a[2] = bf16x2_sub(((q >> 8) & 0x000F000Fu) | magic, zg.sub);
    a[3] = bf16x2_sub(((q >> 12) & 0x000F000Fu) | magic, zh.sub);
  }
}

// One 8-bit word (one column, one k16 step; bytes (r0 i0, r1 i0, r0 i1, r1 i1)) -> lo: the
// fragment register of k pair 2t (r = 0), hi: of k pair 2t + 8 (r = 1).
template <bool kBf16>
__device__ __forceinline__ void dequant8(uint32_t q, const Zc& z, uint32_t& lo, uint32_t& hi) {
  if constexpr (!kBf16) {
    const uint32_t magic = 0x64006400u;
    lo = f16x2_sub((q & 0x00FF00FFu) | magic, z.sub);
    hi = f16x2_sub(((q >> 8) & 0x00FF00FFu) | magic, z.sub);
  } else {
    float zf;
    memcpy(&zf, &z.sub, 4);
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t u = __byte_perm(q, 0x4B000000u, 0x7440u + i);
      memcpy(&v[i], &u, 4);
      v[i] -= zf;
    }
    lo = bf16x2_pack(v[0], v[2]);
    hi = bf16x2_pack(v[1], v[3]);
  }
}

template <bool kF16Scale>
struct ScaleT;
template <>
struct ScaleT<true> {
  using type = uint32_t;  // half2 (column g, column g + 8)
};
template <>
struct ScaleT<false> {
  using type = float2;
};

template <bool kF16Scale>
__device__ __forceinline__ float2 scale_pair(typename ScaleT<kF16Scale>::type s) {
  if constexpr (kF16Scale) {
    __half2 h;
    memcpy(&h, &s, 4);
    return __half22float2(h);
  } else {
    return s;
  }
}

// Codes per lane and 64-row step: one 16-byte vector (4-bit) or two (8-bit).
template <int kCode>
constexpr int vecs_per_step() {
  return kCode == kU4 ? 1 : 2;
}
// Steps per stage: 8 x 16 bytes of codes per lane either way (kPipe: 4 x 16 bytes, and a warp
// keeps two stages, the next one's loads in flight while one is computed).
template <int kCode, bool kPipe>
constexpr int unroll() {
  return (kCode == kU4 ? 8 : 4) / (kPipe ? 2 : 1);
}

// A warp's slice: pointers and constants at its first step; chunk i starts kU * i steps later.
template <bool kF16Scale, int kN8>
struct Slice {
  const char* w;         // this lane's code vector of the slice's first step
  const __half* x[kN8];  // x rows g (+ 8) at column 8t of the slice's first step
  bool xlive[kN8];       // the row exists (M)
  int klim;              // K - 8t - first row of the slice: x vectors at offsets < klim exist
  int s;                 // the slice's first step
  int steps;             // steps in the slice
  const typename ScaleT<kF16Scale>::type* sc;  // the tile's scale pairs (column g, g + 8)
  const uint16_t* zp;                          // the tile's zero-point pairs, or null
  int shift;                                   // log2(group rows); 31 for one group
  int last_group;
  bool g32;  // two groups per step
};

// One stage in registers: the code vectors, scale and zero-point pairs of kU steps.
template <int kCode, bool kF16Scale, int kU>
struct Stage {
  uint4 w[kU][vecs_per_step<kCode>()];
  typename ScaleT<kF16Scale>::type sc[kU];
  uint32_t zz[kU];
};

template <int kCode, bool kBf16>
__device__ __forceinline__ void step_half(const uint4 (&w)[vecs_per_step<kCode>()], int h,
                                          const Zc& zg, const Zc& zh, const uint4* xv, int n8,
                                          float (*d)[4]) {
#pragma unroll
  for (int jj = 0; jj < 2; ++jj) {
    uint32_t a[4];
    if constexpr (kCode == kU4) {
      const uint32_t q = h == 0 ? (jj == 0 ? w[0].x : w[0].y) : (jj == 0 ? w[0].z : w[0].w);
      dequant4<kBf16>(q, zg, zh, a);
    } else {
      // 8-bit: vector h of the step; words (c = jj, column g), (c = jj, column g + 8).
      const uint4& v = w[h];
      dequant8<kBf16>(jj == 0 ? v.x : v.z, zg, a[0], a[2]);
      dequant8<kBf16>(jj == 0 ? v.y : v.w, zh, a[1], a[3]);
    }
    for (int n = 0; n < n8; ++n) {
      mma<kBf16>(d[n], a, jj == 0 ? xv[n].x : xv[n].z, jj == 0 ? xv[n].y : xv[n].w);
    }
  }
}

template <bool kF16Scale, int kN8>
__device__ __forceinline__ void flush(float (&acc)[kN8][4], float (&d)[kN8][4],
                                      typename ScaleT<kF16Scale>::type sc) {
  const float2 s2 = scale_pair<kF16Scale>(sc);
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    acc[n][0] = fmaf(d[n][0], s2.x, acc[n][0]);
    acc[n][1] = fmaf(d[n][1], s2.x, acc[n][1]);
    acc[n][2] = fmaf(d[n][2], s2.y, acc[n][2]);
    acc[n][3] = fmaf(d[n][3], s2.y, acc[n][3]);
#pragma unroll
    for (int i = 0; i < 4; ++i) d[n][i] = 0.0f;
  }
}

// Chunk i's scale and zero-point pairs (its first min(kU, steps left) steps).
template <int kCode, bool kF16Scale, bool kZp, int kN8, int kU>
__device__ __forceinline__ void load_scales(const Slice<kF16Scale, kN8>& c, int i,
                                            Stage<kCode, kF16Scale, kU>& st) {
  const int first = i * kU;
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if (first + u < c.steps) {
      const int grp = ((c.s + first + u) << 6) >> c.shift;
      st.sc[u] = __ldg(c.sc + grp * 8);
      if constexpr (kZp) st.zz[u] = __ldg(c.zp + grp * 8);
    }
  }
}

// Issues chunk i's loads (its first min(kU, steps left) steps).
template <int kCode, bool kF16Scale, bool kZp, int kN8, int kU>
__device__ __forceinline__ void load_stage(const Slice<kF16Scale, kN8>& c, int i,
                                           Stage<kCode, kF16Scale, kU>& st) {
  constexpr int kVecs = vecs_per_step<kCode>();
  const int first = i * kU;
  const char* w = c.w + first * (kVecs * 512);
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if (first + u < c.steps) {
#pragma unroll
      for (int v = 0; v < kVecs; ++v) st.w[u][v] = ld_stream(w + (u * kVecs + v) * 512);
    }
  }
  load_scales<kCode, kF16Scale, kZp, kN8, kU>(c, i, st);
}

// Chunk i from its stage: per step both 32-row halves through the tensor cores into d, added times
// the step's scale (per half with 32-row groups). kFull: the chunk's kU steps all exist and lie
// inside K, so no step or x load needs a guard (the x rows past M read row 0 instead of zeros: the
// mma keeps x rows apart, and rows past M are never stored).
template <int kCode, bool kBf16, bool kF16Scale, bool kZp, int kN8, int kU, bool kFull = false>
__device__ __forceinline__ void compute_stage(const Slice<kF16Scale, kN8>& c, int i,
                                              const Stage<kCode, kF16Scale, kU>& st, const Zc& sym,
                                              float (&acc)[kN8][4]) {
  using Scale = typename ScaleT<kF16Scale>::type;
  const int first = i * kU;
  float d[kN8][4];
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) d[n][e] = 0.0f;
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if (!kFull && first + u >= c.steps) break;
    Scale s_cur = st.sc[u];
    Zc zg = sym, zh = sym;
    if constexpr (kZp) {
      zg = zero_consts<kCode, kBf16>(st.zz[u] & 0xFFu);
      zh = zero_consts<kCode, kBf16>(st.zz[u] >> 8);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h == 1 && c.g32) {
        // 32-row groups: the second half has its own scale and zero points (the K padding past
        // the last group reads the last one; x is 0 there).
        flush<kF16Scale, kN8>(acc, d, s_cur);
        const int grp = min((((c.s + first + u) << 6) >> c.shift) + 1, c.last_group);
        s_cur = __ldg(c.sc + grp * 8);
        if constexpr (kZp) {
          const uint32_t z2 = __ldg(c.zp + grp * 8);
          zg = zero_consts<kCode, kBf16>(z2 & 0xFFu);
          zh = zero_consts<kCode, kBf16>(z2 >> 8);
        }
      }
      const int off = (first + u) * 64 + 32 * h;
      uint4 xv[kN8];
#pragma unroll
      for (int n = 0; n < kN8; ++n) {
        if constexpr (kFull) {
          xv[n] = __ldg(reinterpret_cast<const uint4*>(c.x[n] + off));
        } else {
          xv[n] = make_uint4(0, 0, 0, 0);
          if (c.xlive[n] && off < c.klim) {
            xv[n] = __ldg(reinterpret_cast<const uint4*>(c.x[n] + off));
          }
        }
      }
      step_half<kCode, kBf16>(st.w[u], h, zg, zh, xv, kN8, d);
    }
    flush<kF16Scale, kN8>(acc, d, s_cur);
  }
}

// A warp's place: its tile, its slice of K (whole steps), the slice's pointers and constants.
struct WarpPlace {
  int warp, lane, tile_in_block, slice, tile;
  bool live;
  int s_begin, s_end;
};

// Slices start at multiples of `align` steps.
__device__ __forceinline__ WarpPlace warp_place(const GemvParams& p, int align = 1) {
  WarpPlace w;
  w.warp = static_cast<int>(threadIdx.x) >> 5;
  w.lane = static_cast<int>(threadIdx.x) & 31;
  w.tile_in_block = w.warp / p.wk;
  w.slice = w.warp % p.wk;
  w.tile = static_cast<int>(blockIdx.x) * p.tpb + w.tile_in_block;
  w.live = w.tile < p.tiles;
  const int64_t units = (p.steps + align - 1) / align;
  w.s_begin = min(p.steps, static_cast<int>(w.slice * units / p.wk) * align);
  w.s_end = min(p.steps, static_cast<int>((w.slice + 1) * units / p.wk) * align);
  return w;
}

template <int kCode, bool kF16Scale, bool kZp, int kN8>
__device__ __forceinline__ Slice<kF16Scale, kN8> make_slice(const GemvParams& p,
                                                            const WarpPlace& w) {
  constexpr int kVecs = vecs_per_step<kCode>();
  using Scale = typename ScaleT<kF16Scale>::type;
  const int g = w.lane >> 2;
  const int t = w.lane & 3;
  Slice<kF16Scale, kN8> c;
  // This lane's code vectors: tile, step, lane (wo_repack's order; 8-bit: two 32-row steps).
  c.w = static_cast<const char*>(p.w) +
        ((static_cast<int64_t>(w.tile) * p.steps + w.s_begin) * kVecs * 32 + w.lane) * 16;
  c.sc = static_cast<const Scale*>(p.scales) + static_cast<int64_t>(w.tile) * p.groups * 8 + g;
  c.zp = kZp ? reinterpret_cast<const uint16_t*>(p.zeros) +
                   static_cast<int64_t>(w.tile) * p.groups * 8 + g
             : nullptr;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    const int m = n * 8 + g;
    c.xlive[n] = m < p.M;
    c.x[n] = static_cast<const __half*>(p.x) + static_cast<int64_t>(c.xlive[n] ? m : 0) * p.ldx +
             8 * t + static_cast<int64_t>(w.s_begin) * 64;
  }
  c.klim = p.K - 8 * t - w.s_begin * 64;
  c.s = w.s_begin;
  c.steps = w.s_end - w.s_begin;
  c.shift = p.group_shift < 0 ? 31 : p.group_shift;
  c.last_group = p.groups - 1;
  c.g32 = p.group_shift == 5;
  return c;
}

// v as the layer's output dtype holds it (the value a plain run stores and the add reads back).
__device__ __forceinline__ float round_to_code(float v, int code) {
  if (code == kBF16) return __bfloat162float(__float2bfloat16_rn(v));
  if (code == kF16) return __half2float(__float2half_rn(v));
  return v;
}

// RmsPrologue: the inverse RMS of the x rows in this lane's fragments (row n * 8 + 2t + j at
// [n][j]) from the partial sums the layer before wrote. The block's warps share the rows (warp w:
// rows w, w + warps, ..., kRowsInFlight of them per pass, their loads in flight together); per
// row the warp adds the partials in f64 (lane strides, then a butterfly: a fixed order, so every
// block gets the same bits) and takes 1 / sqrt(sum / cols + eps) in f64, as the decoder's norm
// kernel does; the inverses meet in shared memory. Called by every thread of the block. (Each warp
// taking all rows itself read M x partial_count doubles per warp: at M = 16 the 8B decode step
// ran 1.4x slower fused than unfused, H200 2026-12-05.)
template <int kN8>
__device__ __forceinline__ void row_inverses(const GemvParams& p, const GemvFusion& f,
                                             const WarpPlace& w, float (&inv)[kN8][2]) {
  constexpr int kRowsInFlight = 4;
  __shared__ float block_inv[kN8 * 8];
  const int t = w.lane & 3;
#pragma unroll
  for (int n = 0; n < kN8; ++n) inv[n][0] = inv[n][1] = 1.0f;
  if (f.partials_in == nullptr) return;  // uniform over the grid
  const int warps = static_cast<int>(blockDim.x) >> 5;
  const int rows = min(p.M, kN8 * 8);
  for (int first = w.warp; first < rows; first += warps * kRowsInFlight) {  // warp-uniform
    double s[kRowsInFlight];
#pragma unroll
    for (int r = 0; r < kRowsInFlight; ++r) s[r] = 0.0;
#pragma unroll 4
    for (int i = w.lane; i < f.partial_count; i += 32) {
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) {
        const int m = first + r * warps;
        if (m < rows) s[r] += f.partials_in[static_cast<int64_t>(m) * f.ldpi + i];
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsInFlight; ++r) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) s[r] += __shfl_xor_sync(0xFFFFFFFFu, s[r], off);
      const int m = first + r * warps;
      if (w.lane == 0 && m < rows) {
        block_inv[m] =
            static_cast<float>(1.0 / sqrt(s[r] / static_cast<double>(f.norm_cols) + f.eps));
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int row = n * 8 + 2 * t + j;
      if (row < rows) inv[n][j] = block_inv[row];
    }
  }
}

// AddNormEpilogue from a tile's whole fragment (the warp holds all 16 columns of its rows):
// residual += y, pre = weight * residual, and per row the f64 sum of the 16 squares (columns g and
// g + 8 in the lane, then a butterfly over g: a fixed order) into partials_out[row, tile].
template <int kN8>
__device__ __forceinline__ void add_norm_store(const GemvParams& p, const GemvFusion& f,
                                               const WarpPlace& w, const float (&frag)[kN8][4],
                                               const float (&inv)[kN8][2]) {
  const int g = w.lane >> 2;
  const int t = w.lane & 3;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    double sq[2] = {0.0, 0.0};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int col = w.tile * 16 + g + (i >= 2 ? 8 : 0);
      const int row = n * 8 + 2 * t + (i & 1);
      if (row < p.M && col < p.N) {
        float v = frag[n][i];
        if (f.partials_in != nullptr) v = __fmul_rn(v, inv[n][i & 1]);
        if (p.bias != nullptr) v += p.bias[col];
        v = round_to_code(v, p.out_code);
        float* r = f.residual + static_cast<int64_t>(row) * f.ldr + col;
        const float sum = __fadd_rn(*r, v);
        *r = sum;
        cuda_device::store_element(f.pre, static_cast<int64_t>(row) * f.ldpre + col,
                                   __fmul_rn(f.norm_weight[col], sum), f.pre_code);
        sq[i & 1] += static_cast<double>(sum) * sum;
      }
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      double s = sq[j];
#pragma unroll
      for (int off = 4; off < 32; off *= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, off);
      const int row = n * 8 + 2 * t + j;
      if (g == 0 && row < p.M) f.partials_out[static_cast<int64_t>(row) * f.ldpo + w.tile] = s;
    }
  }
}

// Row inverse j (0: fragment row 2t, 1: 2t + 1) of n8 tile n, for runtime n and j, without
// indexing a register array.
template <int kN8>
__device__ __forceinline__ float inverse_at(const float (&inv)[kN8][2], int n, int j) {
  float r = j != 0 ? inv[0][1] : inv[0][0];
#pragma unroll
  for (int nn = 1; nn < kN8; ++nn) {
    if (nn == n) r = j != 0 ? inv[nn][1] : inv[nn][0];
  }
  return r;
}

// silu(g) * u from g and u as a plain run stores them (rounded to the layer's output dtype), in
// the arithmetic of the decoder's silu_mul kernel (decoder_ops.cu), so that the fused and the
// unfused decoder agree bit for bit.
__device__ __forceinline__ float swiglu_of(float g, float u, int out_code) {
  g = round_to_code(g, out_code);
  u = round_to_code(u, out_code);
  return __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
}

// finish() (below) of a fused run: the same sums, with the RMS prologue's inverse applied before
// the bias and, with the add-norm epilogue, the tile's first warp adding the slices (in the same
// order) and writing the whole tile, whose row sums need all 16 columns. Paired layouts
// (f.half_cols) store through the column map, or with the SwiGLU epilogue write
// silu(gate) * up from each lane's (column g, column g + 8) pairs. A kernel of its own (kFuse):
// the fused path's registers would otherwise count against the plain kernels' occupancy (ptxas:
// +5 to +20 registers on the register-pipeline kernels).
template <int kN8>
__device__ __forceinline__ void fused_finish(const GemvParams& p, const GemvFusion& f,
                                             const WarpPlace& w, const float (&acc)[kN8][4],
                                             float* red) {
  float inv[kN8][2];
  row_inverses<kN8>(p, f, w, inv);
  const bool add_norm = f.residual != nullptr;
  const bool swiglu = f.swiglu_out != nullptr;
  // Fragment element (n, i) of lane l: row n * 8 + 2t + (i & 1); its column in the layer.
  auto col_of = [&](int i, int l) {
    if (f.half_cols > 0) return (i >= 2 ? f.half_cols : 0) + w.tile * 8 + (l >> 2);
    return w.tile * 16 + (l >> 2) + (i >= 2 ? 8 : 0);
  };
  auto store = [&](int n, int i, int l, float v, float r) {
    const int col = col_of(i, l);
    const int row = n * 8 + 2 * (l & 3) + (i & 1);
    if (row < p.M && col < p.N) {
      if (f.partials_in != nullptr) v = __fmul_rn(v, r);
      if (p.bias != nullptr) v += p.bias[col];
      cuda_device::store_element(p.y, static_cast<int64_t>(row) * p.ldy + col, v, p.out_code);
    }
  };
  // Gate (fragment element (n, j)) and up ((n, j + 2)) of one row and output column.
  auto store_swiglu = [&](int n, int j, int l, float g, float u, float r) {
    const int col = w.tile * 8 + (l >> 2);
    const int row = n * 8 + 2 * (l & 3) + j;
    if (row < p.M && col < f.half_cols) {
      if (f.partials_in != nullptr) {
        g = __fmul_rn(g, r);
        u = __fmul_rn(u, r);
      }
      if (p.bias != nullptr) {
        g += p.bias[col];
        u += p.bias[f.half_cols + col];
      }
      cuda_device::store_element(f.swiglu_out, static_cast<int64_t>(row) * f.ldsw + col,
                                 swiglu_of(g, u, p.out_code), f.sw_code);
    }
  };
  if (p.wk == 1) {
    if (w.live) {
      if (add_norm) {
        add_norm_store<kN8>(p, f, w, acc, inv);
        return;
      }
      if (swiglu) {
#pragma unroll
        for (int n = 0; n < kN8; ++n) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            store_swiglu(n, j, w.lane, acc[n][j], acc[n][j + 2], inv[n][j]);
          }
        }
        return;
      }
#pragma unroll
      for (int n = 0; n < kN8; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) store(n, i, w.lane, acc[n][i], inv[n][i & 1]);
      }
    }
    return;
  }
  constexpr int kPerWarp = kN8 * 4 * 32;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) red[w.warp * kPerWarp + (n * 4 + i) * 32 + w.lane] = acc[n][i];
  }
  __syncthreads();
  if (!w.live) return;
  const int first = w.tile_in_block * p.wk;
  auto slices_sum = [&](int e) {
    float v = 0.0f;
    for (int q = 0; q < p.wk; ++q) v += red[(first + q) * kPerWarp + e];
    return v;
  };
  if (add_norm) {
    if (w.slice != 0) return;
    float total[kN8][4];
#pragma unroll
    for (int n = 0; n < kN8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) total[n][i] = slices_sum((n * 4 + i) * 32 + w.lane);
    }
    add_norm_store<kN8>(p, f, w, total, inv);
    return;
  }
  // The tile's wk warps share its sums (or, with the SwiGLU, its kN8 * 2 * 32 gate and up pairs),
  // each adding the slices in order. Element e's lane is e % 32, this lane: its rows are the
  // lane's own, whose inverses row_inverses took.
  if (swiglu) {
    for (int e = w.slice * 32 + w.lane; e < kPerWarp / 2; e += p.wk * 32) {
      const int n = (e >> 5) >> 1;
      const int j = (e >> 5) & 1;
      store_swiglu(n, j, w.lane, slices_sum((n * 4 + j) * 32 + w.lane),
                   slices_sum((n * 4 + j + 2) * 32 + w.lane), inverse_at<kN8>(inv, n, j));
    }
    return;
  }
  for (int e = w.slice * 32 + w.lane; e < kPerWarp; e += p.wk * 32) {
    const int n = (e >> 5) >> 2;
    const int i = (e >> 5) & 3;
    store(n, i, w.lane, slices_sum(e), inverse_at<kN8>(inv, n, i & 1));
  }
}

// The block's outputs: with one warp per tile straight from its fragment, else the tile's wk
// slices added in a fixed order through `red` (kMaxWarps x kN8 * 4 x 32 floats of shared memory;
// the caller has made it free). Fragment element (n, i) of lane (g, t): column tile * 16 + g
// (+ 8 for i >= 2), row n * 8 + 2t + (i & 1).
template <int kN8>
__device__ __forceinline__ void finish(const GemvParams& p, const WarpPlace& w,
                                       const float (&acc)[kN8][4], float* red) {
  auto store = [&](int n, int i, int l, float v) {
    const int col = w.tile * 16 + (l >> 2) + (i >= 2 ? 8 : 0);
    const int row = n * 8 + 2 * (l & 3) + (i & 1);
    if (row < p.M && col < p.N) {
      if (p.bias != nullptr) v += p.bias[col];
      cuda_device::store_element(p.y, static_cast<int64_t>(row) * p.ldy + col, v, p.out_code);
    }
  };
  if (p.wk == 1) {
    if (w.live) {
#pragma unroll
      for (int n = 0; n < kN8; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) store(n, i, w.lane, acc[n][i]);
      }
    }
    return;
  }
  constexpr int kPerWarp = kN8 * 4 * 32;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) red[w.warp * kPerWarp + (n * 4 + i) * 32 + w.lane] = acc[n][i];
  }
  __syncthreads();
  if (!w.live) return;
  // The tile's wk warps share its 128 * kN8 sums, each adding the slices in order.
  const int first = w.tile_in_block * p.wk;
  for (int e = w.slice * 32 + w.lane; e < kPerWarp; e += p.wk * 32) {
    float v = 0.0f;
    for (int q = 0; q < p.wk; ++q) v += red[(first + q) * kPerWarp + e];
    store((e >> 5) >> 2, (e >> 5) & 3, e & 31, v);
  }
}

// Blocks of 8 warps: 3 per SM (24 warps, 80 registers) for one stage, one n8 tile of x rows, f16
// scales and no zero points, else 2 (128 registers: the others spill at 80).
template <int kCode, bool kBf16, bool kF16Scale, bool kZp, int kN8, bool kPipe>
__global__ void __launch_bounds__(kMaxWarps * 32, !kPipe && kN8 == 1 && kF16Scale && !kZp ? 3 : 2)
    int_gemv_kernel(const GemvParams p) {
  constexpr int kU = unroll<kCode, kPipe>();
  __shared__ float red[kMaxWarps * kN8 * 4 * 32];
  cuda_device::chain_begin();
  const WarpPlace w = warp_place(p);

  float acc[kN8][4];
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[n][i] = 0.0f;
  }

  if (w.live && w.s_begin < w.s_end) {
    const Slice<kF16Scale, kN8> c = make_slice<kCode, kF16Scale, kZp, kN8>(p, w);
    const Zc sym = zero_consts<kCode, kBf16>(static_cast<uint32_t>(p.sym_zero));
    const int chunks = (c.steps + kU - 1) / kU;
    if constexpr (kPipe) {
      // Two stages in registers: chunk i + 1's loads are issued before chunk i is computed.
      Stage<kCode, kF16Scale, kU> a, b;
      load_stage<kCode, kF16Scale, kZp, kN8, kU>(c, 0, a);
      for (int i = 0; i < chunks; i += 2) {
        if (i + 1 < chunks) load_stage<kCode, kF16Scale, kZp, kN8, kU>(c, i + 1, b);
        compute_stage<kCode, kBf16, kF16Scale, kZp, kN8, kU>(c, i, a, sym, acc);
        if (i + 1 >= chunks) break;
        if (i + 2 < chunks) load_stage<kCode, kF16Scale, kZp, kN8, kU>(c, i + 2, a);
        compute_stage<kCode, kBf16, kF16Scale, kZp, kN8, kU>(c, i + 1, b, sym, acc);
      }
    } else {
      for (int i = 0; i < chunks; ++i) {
        Stage<kCode, kF16Scale, kU> a;
        load_stage<kCode, kF16Scale, kZp, kN8, kU>(c, i, a);
        compute_stage<kCode, kBf16, kF16Scale, kZp, kN8, kU>(c, i, a, sym, acc);
      }
    }
  }
  finish<kN8>(p, w, acc, red);
}

// 4-bit codes with the offset left in (the ring kernel): code q becomes the exact f16 / bf16 value
// o + q in one LOP3 per register (bf16: and a shift): f16 column g 1024 + q, f16 column g + 8
// 1024 + 16 q (the nibble read where it lies), bf16 128 + q. The mma sums (o + q) x; one more mma,
// of ones, sums x (X, per x row, the same for every column), and the flush takes
// y += s (D - (o + f z) X) / f (f = 16 for f16 column g + 8, else 1): 7 (f16: 5) instructions per
// 8 weights instead of dequant4's 11 (9). The price: the offset's bits are lost in the f32 sum
// (grid worst relative error 5.4e-4 against 8.6e-6 exact; docs/cuda.md).
template <uint32_t kMask, uint32_t kBits>
__device__ __forceinline__ uint32_t and_or(uint32_t v) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(v), "n"(kMask), "n"(kBits));
  return r;
}
template <bool kBf16>
__device__ __forceinline__ void code4_offset(uint32_t q, uint32_t (&a)[4]) {
  if constexpr (!kBf16) {
    const uint32_t q8 = q >> 8;
    a[0] = and_or<0x000F000Fu, 0x64006400u>(q);
    a[1] = and_or<0x00F000F0u, 0x64006400u>(q);
    a[2] = and_or<0x000F000Fu, 0x64006400u>(q8);
    a[3] = and_or<0x00F000F0u, 0x64006400u>(q8);
  } else {
    a[0] = and_or<0x000F000Fu, 0x43004300u>(q);
    a[1] = and_or<0x000F000Fu, 0x43004300u>(q >> 4);
    a[2] = and_or<0x000F000Fu, 0x43004300u>(q >> 8);
    a[3] = and_or<0x000F000Fu, 0x43004300u>(q >> 12);
  }
}

// The offsets o + f z of columns g and g + 8 as f32, from integer arithmetic on the bit patterns
// (1024 = 0x44800000, whose mantissa unit is 2^-13; 128 = 0x43000000, unit 2^-16).
template <bool kBf16>
__device__ __forceinline__ float2 offsets4(uint32_t zg, uint32_t zh) {
  if constexpr (!kBf16) {
    return make_float2(__uint_as_float(0x44800000u + (zg << 13)),
                       __uint_as_float(0x44800000u + (zh << 17)));
  } else {
    return make_float2(__uint_as_float(0x43000000u + (zg << 16)),
                       __uint_as_float(0x43000000u + (zh << 16)));
  }
}

// acc += s (d - o X) / f per n8 tile of x rows; d and X restart at zero.
template <bool kBf16, bool kF16Scale, int kN8>
__device__ __forceinline__ void flush_offset(float (&acc)[kN8][4], float (&d)[kN8][4],
                                             float (&dx)[kN8][4],
                                             typename ScaleT<kF16Scale>::type sc, float2 o) {
  float2 s2 = scale_pair<kF16Scale>(sc);
  if constexpr (!kBf16) s2.y *= 0.0625f;
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    acc[n][0] = fmaf(s2.x, fmaf(-o.x, dx[n][0], d[n][0]), acc[n][0]);
    acc[n][1] = fmaf(s2.x, fmaf(-o.x, dx[n][1], d[n][1]), acc[n][1]);
    acc[n][2] = fmaf(s2.y, fmaf(-o.y, dx[n][0], d[n][2]), acc[n][2]);
    acc[n][3] = fmaf(s2.y, fmaf(-o.y, dx[n][1], d[n][3]), acc[n][3]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      d[n][e] = 0.0f;
      dx[n][e] = 0.0f;
    }
  }
}

// The cp.async ring: each warp streams its code vectors through its own ring of kRingSlots stages
// (kRingVecs 16-byte vectors per lane each: two 64-row steps of 4-bit codes, one of 8-bit) in
// shared memory. A lane copies and later reads only its own vectors, so the ring needs no barrier,
// only cp.async.wait_group; kRingSlots - 1 stages stay in flight while one is computed and hold no
// registers. Stages wholly inside the slice and K run unguarded; the scales of the next stage are
// loaded while one is computed. One n8 tile of x rows (M <= 8) or, 4-bit only, two (M 9-16: each
// code vector then feeds twice the mma, and the x loads double).
constexpr int kRingVecs = 2;
constexpr int kRingSlots = 4;
constexpr int kRingLaneVecs = kRingSlots * kRingVecs;
static_assert((kRingSlots & (kRingSlots - 1)) == 0, "slots are picked with a mask");

// For groups of >= 128 rows and channelwise (one scale and zero-point pair per 4-bit stage) the
// pairs travel through the ring with their stage's codes, kRingSlots - 1 stages ahead: loaded one
// stage ahead into registers, as the narrower groups still load them, each stage's pair was a DRAM
// round trip of its own that the warp waited for (tests/device/stream_probe.cu on the H200: a
// pure stream of 8192x57344's codes with the gemv's x loads and mma 64 us, with the scales one
// stage ahead in registers 71 us, through the ring 64 us). Words per lane and slot: the scale
// pair (1 f16x2 or 2 f32) and the 32-bit word holding the lane's u8 zero-point pair.
template <bool kF16Scale>
constexpr int ring_scale_words() {
  return kF16Scale ? 1 : 2;
}
constexpr int pair_words(bool f16_scale, bool zeros) {
  return (f16_scale ? 1 : 2) + (zeros ? 1 : 0);
}
template <bool kF16Scale, bool kZp>
constexpr int ring_pair_words() {
  return pair_words(kF16Scale, kZp);
}

// cp.async of 4 or 8 bytes (.ca: the smaller sizes exist only there).
template <int kBytes>
__device__ __forceinline__ void cp_async_small(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(kBytes));
}

// Scale (and zero-point) pairs of one 4-bit stage: per 32-row half, per step, or one (groups of
// >= 128 rows and channelwise: slices start at even steps, so a stage lies in one group).
template <bool kF16Scale, int kGroups>
struct RingScales {
  static constexpr int kN = kGroups == kGemvG32 ? 4 : kGroups == kGemvG64 ? 2 : 1;
  typename ScaleT<kF16Scale>::type sc[kN];
  uint32_t zz[kN];
};

template <bool kF16Scale, bool kZp, int kGroups, int kN8>
__device__ __forceinline__ void load_ring_scales(const Slice<kF16Scale, kN8>& c, int i,
                                                 RingScales<kF16Scale, kGroups>& r) {
  const int step = c.s + 2 * i;
#pragma unroll
  for (int e = 0; e < RingScales<kF16Scale, kGroups>::kN; ++e) {
    // Entries past the slice's last group read the last one (their x is zero).
    int grp;
    if constexpr (kGroups == kGemvG32) {
      grp = min(2 * step + e, c.last_group);
    } else if constexpr (kGroups == kGemvG64) {
      grp = min(step + e, c.last_group);
    } else {
      grp = (step << 6) >> c.shift;
    }
    r.sc[e] = __ldg(c.sc + grp * 8);
    if constexpr (kZp) r.zz[e] = __ldg(c.zp + grp * 8);
  }
}

// The x vectors of 4-bit stage i, per n8 tile n, step u and half h at [n][2 u + h]. kFull: both
// steps exist and lie inside K, else the x of missing steps and of rows past K is zero (the ring
// slot's stale codes then add nothing). x rows past M read row 0 (make_slice): never stored. The
// caller issues these loads before it waits for the stage's codes: issued after the wait (where the
// compiler put them when they were part of the stage's computation) their L2 round trip came on top
// of it, the first mma of every stage waiting for x.
template <bool kF16Scale, int kN8, bool kFull>
__device__ __forceinline__ void ring_x(const Slice<kF16Scale, kN8>& c, int i, uint4 (&xv)[kN8][4]) {
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
    const __half* xs = c.x[n] + static_cast<int64_t>(i) * 128;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int off = u * 64 + 32 * h;
        xv[n][2 * u + h] = make_uint4(0, 0, 0, 0);
        if (kFull || (2 * i + u < c.steps && 128 * i + off < c.klim)) {
          xv[n][2 * u + h] = __ldg(reinterpret_cast<const uint4*>(xs + off));
        }
      }
    }
  }
}

// One 4-bit stage (two steps) from its code vectors and x (ring_x).
template <bool kBf16, bool kF16Scale, bool kZp, int kGroups, int kN8>
__device__ __forceinline__ void ring_stage4(const uint4 (&wv)[2], const uint4 (&x4)[kN8][4],
                                            const RingScales<kF16Scale, kGroups>& r, float2 sym,
                                            float (&acc)[kN8][4]) {
  constexpr uint32_t kOne = kBf16 ? 0x3F803F80u : 0x3C003C00u;
  const uint32_t ones[4] = {kOne, kOne, kOne, kOne};
  float d[kN8][4];
  float dx[kN8][4];
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      d[n][e] = 0.0f;
      dx[n][e] = 0.0f;
    }
  }
  auto offsets = [&](int e) {
    if constexpr (kZp) return offsets4<kBf16>(r.zz[e] & 0xFFu, r.zz[e] >> 8);
    return sym;
  };
#pragma unroll
  for (int u = 0; u < 2; ++u) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        uint32_t a[4];
        code4_offset<kBf16>(h == 0 ? (jj == 0 ? wv[u].x : wv[u].y) : (jj == 0 ? wv[u].z : wv[u].w),
                            a);
#pragma unroll
        for (int n = 0; n < kN8; ++n) {
          const uint4 xv = x4[n][2 * u + h];
          const uint32_t b0 = jj == 0 ? xv.x : xv.z;
          const uint32_t b1 = jj == 0 ? xv.y : xv.w;
          mma<kBf16>(d[n], a, b0, b1);
          mma<kBf16>(dx[n], ones, b0, b1);
        }
      }
      if constexpr (kGroups == kGemvG32) {
        flush_offset<kBf16, kF16Scale, kN8>(acc, d, dx, r.sc[2 * u + h], offsets(2 * u + h));
      }
    }
    if constexpr (kGroups == kGemvG64) {
      flush_offset<kBf16, kF16Scale, kN8>(acc, d, dx, r.sc[u], offsets(u));
    }
  }
  if constexpr (kGroups == kGemvGWide)
    flush_offset<kBf16, kF16Scale, kN8>(acc, d, dx, r.sc[0], offsets(0));
}

// Forms of the 4-bit ring kernel for groups of >= 128 rows (QLINEAR_CUDA_GEMV_FORM, for
// measurements): 1 (the default) the pairs through the ring, 2 the pairs one stage ahead in
// registers (the form before 2026-12-02). Other group sizes and 8-bit codes have form 2 only.
// (A third form capped at 64 registers for 4 blocks per SM spilled and measured between the two
// at M = 1: bench/results/h200-gemv-2026-12-02c.)
enum RingForm : int { kRingPairs = 1, kRingRegPairs = 2 };

// Whether a ring kernel's scale and zero-point pairs travel through the ring (see
// ring_scale_words).
constexpr bool scales_in_ring(int code, int groups, int form) {
  return code == kU4 && groups == kGemvGWide && form != kRingRegPairs;
}

// kN8 2 (4-bit only): two n8 tiles of x rows, 2 blocks per SM (the doubled x vectors and
// accumulators do not fit 80 registers).
// The ring kernel's body; kFuse: with the norm fusion's finish (fused_finish; 4-bit only).
template <int kCode, bool kBf16, bool kF16Scale, bool kZp, int kGroups, int kForm, int kN8,
          bool kFuse>
__device__ __forceinline__ void ring_body(const GemvParams& p, const GemvFusion& f) {
  static_assert(kN8 == 1 || kCode == kU4, "8-bit ring stages serve one n8 tile");
  constexpr int kVecs = vecs_per_step<kCode>();
  constexpr int kU = kRingVecs / kVecs;  // steps per stage
  constexpr bool kPairsInRing = scales_in_ring(kCode, kGroups, kForm);
  constexpr int kPairWords = ring_pair_words<kF16Scale, kZp>();
  extern __shared__ uint4 ring_smem[];
  cuda_device::allow_next_grid();
  const WarpPlace w = warp_place(p, kU);

  float acc[kN8][4];
#pragma unroll
  for (int n = 0; n < kN8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
  }
  if (w.live && w.s_begin < w.s_end) {
    const Slice<kF16Scale, kN8> c = make_slice<kCode, kF16Scale, kZp, kN8>(p, w);
    // Narrower groups: stage 0's scales first, a DRAM round trip of their own, in flight beside
    // the first stages' codes rather than after them.
    RingScales<kF16Scale, kGroups> cur, next;
    if constexpr (kCode == kU4 && !kPairsInRing) {
      load_ring_scales<kF16Scale, kZp, kGroups, kN8>(c, 0, cur);
    }
    uint4* ring = ring_smem + w.warp * (kRingLaneVecs * 32) + w.lane;
    // The pair ring after all warps' code rings: per warp and slot the 32 lanes' scale pairs
    // (a lane's words adjacent: the f32 pair is one 8-byte copy), then their zero-point words.
    constexpr int kScaleWords = ring_scale_words<kF16Scale>();
    uint32_t* pairs = reinterpret_cast<uint32_t*>(ring_smem + blockDim.x * kRingLaneVecs) +
                      w.warp * (kRingSlots * kPairWords * 32);
    auto pair_slot = [&](int j) { return pairs + (j & (kRingSlots - 1)) * (kPairWords * 32); };
    // Stage j's pairs into its slot (groups of >= 128 rows: a stage lies in one group).
    auto issue_pairs = [&](int j) {
      if constexpr (kPairsInRing) {
        const int grp = ((c.s + kU * j) << 6) >> c.shift;
        uint32_t* slot = pair_slot(j);
        cp_async_small<4 * kScaleWords>(slot + w.lane * kScaleWords, c.sc + grp * 8);
        if constexpr (kZp) {
          // The aligned word holding the lane's u16 pair (entries start at multiples of 8).
          const auto word = reinterpret_cast<uintptr_t>(c.zp + grp * 8) & ~uintptr_t{3};
          cp_async_small<4>(slot + kScaleWords * 32 + w.lane, reinterpret_cast<const void*>(word));
        }
      }
    };
    // Stage j's pairs from its slot, once the stage has arrived.
    auto read_pairs = [&](int j, RingScales<kF16Scale, kGroups>& r) {
      if constexpr (kPairsInRing) {
        const uint32_t* slot = pair_slot(j);
        if constexpr (kF16Scale) {
          r.sc[0] = slot[w.lane];
        } else {
          r.sc[0] = *reinterpret_cast<const float2*>(slot + 2 * w.lane);
        }
        if constexpr (kZp) {
          r.zz[0] = (slot[kScaleWords * 32 + w.lane] >> (16 * ((w.lane >> 2) & 1))) & 0xFFFFu;
        }
      }
    };
    const int nvec = c.steps * kVecs;
    const int stages = (c.steps + kU - 1) / kU;
    // Stages 0 .. full - 1 hold kU steps whose x rows all lie inside K.
    const int full = max(0, min(c.steps, p.K / 64 - c.s)) / kU;
    // Stages 0 .. whole - 1 hold kRingVecs vectors of the slice.
    const int whole = nvec / kRingVecs;
    // Iterations 0 .. steady - 1 refill whole stages and compute full ones: no guard at all.
    const int steady = max(0, min(full, whole - (kRingSlots - 1)));
    auto slot_of = [&](int j) { return ring + (j & (kRingSlots - 1)) * (kRingVecs * 32); };
    auto issue = [&](int j) {
      uint4* slot = slot_of(j);
      const char* src = c.w + static_cast<int64_t>(j) * (kRingVecs * 512);
#pragma unroll
      for (int v = 0; v < kRingVecs; ++v) {
        if (j * kRingVecs + v < nvec) cp_async16(slot + v * 32, src + v * 512, true);
      }
      issue_pairs(j);
    };
#pragma unroll
    for (int j = 0; j < kRingSlots - 1; ++j) {
      if (j < stages) issue(j);
      cp_async_commit();
    }
    // Codes and scales are constant: they stream in while the kernel before this one finishes.
    // x is its output.
    cuda_device::wait_for_prior_grids();
    // Iteration i: refill the slot stage i - 1 was read from (its vectors are used by now) with
    // stage i + kRingSlots - 1, load stage i + 1's scales, wait for stage i, compute it.
    if constexpr (kCode == kU4) {
      const float2 sym =
          offsets4<kBf16>(static_cast<uint32_t>(p.sym_zero), static_cast<uint32_t>(p.sym_zero));
      const char* src = c.w + static_cast<int64_t>(kRingSlots - 1) * (kRingVecs * 512);
      int i = 0;
      for (; i < steady; ++i) {
        uint4 xv[kN8][4];
        ring_x<kF16Scale, kN8, true>(c, i, xv);
        uint4* fill = slot_of(i + kRingSlots - 1);
#pragma unroll
        for (int v = 0; v < kRingVecs; ++v) cp_async16(fill + v * 32, src + v * 512, true);
        issue_pairs(i + kRingSlots - 1);
        src += kRingVecs * 512;
        cp_async_commit();
        if constexpr (!kPairsInRing) load_ring_scales<kF16Scale, kZp, kGroups, kN8>(c, i + 1, next);
        cp_async_wait<kRingSlots - 1>();
        const uint4* slot = slot_of(i);
        const uint4 wv[2] = {slot[0], slot[32]};
        read_pairs(i, cur);
        ring_stage4<kBf16, kF16Scale, kZp, kGroups, kN8>(wv, xv, cur, sym, acc);
        if constexpr (!kPairsInRing) cur = next;
      }
      for (; i < stages; ++i) {
        uint4 xv[kN8][4];
        if (i < full) {
          ring_x<kF16Scale, kN8, true>(c, i, xv);
        } else {
          ring_x<kF16Scale, kN8, false>(c, i, xv);
        }
        if (i + kRingSlots - 1 < stages) issue(i + kRingSlots - 1);
        cp_async_commit();
        if constexpr (!kPairsInRing) {
          if (i + 1 < stages) load_ring_scales<kF16Scale, kZp, kGroups, kN8>(c, i + 1, next);
        }
        cp_async_wait<kRingSlots - 1>();
        const uint4* slot = slot_of(i);
        const uint4 wv[2] = {slot[0], slot[32]};
        read_pairs(i, cur);
        ring_stage4<kBf16, kF16Scale, kZp, kGroups, kN8>(wv, xv, cur, sym, acc);
        if constexpr (!kPairsInRing) cur = next;
      }
    } else {
      const Zc sym = zero_consts<kCode, kBf16>(static_cast<uint32_t>(p.sym_zero));
      Stage<kCode, kF16Scale, kU> st, next;
      load_scales<kCode, kF16Scale, kZp, kN8, kU>(c, 0, st);
      for (int i = 0; i < stages; ++i) {
        if (i + kRingSlots - 1 < stages) issue(i + kRingSlots - 1);
        cp_async_commit();
        if (i + 1 < stages) load_scales<kCode, kF16Scale, kZp, kN8, kU>(c, i + 1, next);
        cp_async_wait<kRingSlots - 1>();
        const uint4* slot = slot_of(i);
#pragma unroll
        for (int u = 0; u < kU; ++u) {
#pragma unroll
          for (int v = 0; v < kVecs; ++v) st.w[u][v] = slot[(u * kVecs + v) * 32];
        }
        if (i < full) {
          compute_stage<kCode, kBf16, kF16Scale, kZp, kN8, kU, true>(c, i, st, sym, acc);
        } else {
          compute_stage<kCode, kBf16, kF16Scale, kZp, kN8, kU, false>(c, i, st, sym, acc);
        }
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          st.sc[u] = next.sc[u];
          st.zz[u] = next.zz[u];
        }
      }
    }
    cp_async_wait<0>();
  }
  // The reduction reuses the ring: every warp is past its last read. (Warps without work wait
  // here for the kernel before, before they write the outputs.)
  cuda_device::wait_for_prior_grids();
  __syncthreads();
  if constexpr (kFuse) {
    fused_finish<kN8>(p, f, w, acc, reinterpret_cast<float*>(ring_smem));
  } else {
    (void)f;
    finish<kN8>(p, w, acc, reinterpret_cast<float*>(ring_smem));
  }
}

template <int kCode, bool kBf16, bool kF16Scale, bool kZp, int kGroups, int kForm = kRingRegPairs,
          int kN8 = 1>
__global__ void __launch_bounds__(kMaxWarps * 32, kN8 == 1 ? 3 : 2)
    int_gemv_ring_kernel(const GemvParams p) {
  ring_body<kCode, kBf16, kF16Scale, kZp, kGroups, kForm, kN8, false>(p, GemvFusion{});
}

template <bool kBf16, bool kF16Scale, bool kZp, int kGroups, int kForm, int kN8>
__global__ void __launch_bounds__(kMaxWarps * 32, kN8 == 1 ? 3 : 2)
    int_gemv_ring_fused_kernel(const GemvParams p, const GemvFusion f) {
  ring_body<kU4, kBf16, kF16Scale, kZp, kGroups, kForm, kN8, true>(p, f);
}

using KernelFn = void (*)(GemvParams);

// The 4-bit ring kernel has one or two n8 tiles of x rows, the 8-bit one one (with two the
// one-stage register kernel runs).
bool uses_ring(const GemvVariant& v) { return v.pipe == kGemvRing && (v.n8 == 1 || v.code == kU4); }

int ring_form() {
  static const int form = [] {
    const char* env = std::getenv("QLINEAR_CUDA_GEMV_FORM");
    return env != nullptr && std::atoi(env) == kRingRegPairs ? kRingRegPairs : kRingPairs;
  }();
  return form;
}

template <bool kBf16, bool kF16Scale, bool kZp, int kN8>
KernelFn pick_ring4(const GemvVariant& v) {
  if (v.groups == kGemvG32) {
    return int_gemv_ring_kernel<kU4, kBf16, kF16Scale, kZp, kGemvG32, kRingRegPairs, kN8>;
  }
  if (v.groups == kGemvG64) {
    return int_gemv_ring_kernel<kU4, kBf16, kF16Scale, kZp, kGemvG64, kRingRegPairs, kN8>;
  }
  if (ring_form() == kRingRegPairs) {
    return int_gemv_ring_kernel<kU4, kBf16, kF16Scale, kZp, kGemvGWide, kRingRegPairs, kN8>;
  }
  return int_gemv_ring_kernel<kU4, kBf16, kF16Scale, kZp, kGemvGWide, kRingPairs, kN8>;
}

using FusedKernelFn = void (*)(GemvParams, GemvFusion);

// The fused kernels: 4-bit codes in the ring, the default form for wide groups.
template <bool kBf16, bool kF16Scale, bool kZp, int kN8>
FusedKernelFn pick_fused_groups(const GemvVariant& v) {
  if (v.groups == kGemvG32) {
    return int_gemv_ring_fused_kernel<kBf16, kF16Scale, kZp, kGemvG32, kRingRegPairs, kN8>;
  }
  if (v.groups == kGemvG64) {
    return int_gemv_ring_fused_kernel<kBf16, kF16Scale, kZp, kGemvG64, kRingRegPairs, kN8>;
  }
  return int_gemv_ring_fused_kernel<kBf16, kF16Scale, kZp, kGemvGWide, kRingPairs, kN8>;
}

template <bool kBf16, bool kF16Scale, bool kZp>
FusedKernelFn pick_fused_n8(const GemvVariant& v) {
  return v.n8 == 1 ? pick_fused_groups<kBf16, kF16Scale, kZp, 1>(v)
                   : pick_fused_groups<kBf16, kF16Scale, kZp, 2>(v);
}

FusedKernelFn pick_fused(const GemvVariant& v) {
  if (v.bf16) {
    if (v.f16_scale) {
      return v.zeros ? pick_fused_n8<true, true, true>(v) : pick_fused_n8<true, true, false>(v);
    }
    return v.zeros ? pick_fused_n8<true, false, true>(v) : pick_fused_n8<true, false, false>(v);
  }
  if (v.f16_scale) {
    return v.zeros ? pick_fused_n8<false, true, true>(v) : pick_fused_n8<false, true, false>(v);
  }
  return v.zeros ? pick_fused_n8<false, false, true>(v) : pick_fused_n8<false, false, false>(v);
}

template <int kCode, bool kBf16, bool kF16Scale, bool kZp>
KernelFn pick_n8(const GemvVariant& v) {
  if (uses_ring(v)) {
    // 8-bit stages are single steps whose scales follow any group size.
    if constexpr (kCode == kU8) {
      return int_gemv_ring_kernel<kCode, kBf16, kF16Scale, kZp, kGemvGWide>;
    } else {
      return v.n8 == 1 ? pick_ring4<kBf16, kF16Scale, kZp, 1>(v)
                       : pick_ring4<kBf16, kF16Scale, kZp, 2>(v);
    }
  }
  if (v.pipe == kGemvTwoStages) {
    return v.n8 == 1 ? int_gemv_kernel<kCode, kBf16, kF16Scale, kZp, 1, true>
                     : int_gemv_kernel<kCode, kBf16, kF16Scale, kZp, 2, true>;
  }
  return v.n8 == 1 ? int_gemv_kernel<kCode, kBf16, kF16Scale, kZp, 1, false>
                   : int_gemv_kernel<kCode, kBf16, kF16Scale, kZp, 2, false>;
}

template <int kCode, bool kBf16>
KernelFn pick_scale(const GemvVariant& v) {
  if (v.f16_scale) {
    return v.zeros ? pick_n8<kCode, kBf16, true, true>(v) : pick_n8<kCode, kBf16, true, false>(v);
  }
  return v.zeros ? pick_n8<kCode, kBf16, false, true>(v) : pick_n8<kCode, kBf16, false, false>(v);
}

KernelFn pick(const GemvVariant& v) {
  if (v.code == kU4) return v.bf16 ? pick_scale<kU4, true>(v) : pick_scale<kU4, false>(v);
  return v.bf16 ? pick_scale<kU8, true>(v) : pick_scale<kU8, false>(v);
}

std::size_t dynamic_smem(const GemvVariant& v, unsigned threads) {
  if (!uses_ring(v)) return 0;
  std::size_t bytes = threads * kRingLaneVecs * sizeof(uint4);
  if (scales_in_ring(v.code, v.groups, ring_form())) {
    bytes += static_cast<std::size_t>(threads) * kRingSlots * pair_words(v.f16_scale, v.zeros) *
             sizeof(uint32_t);
  }
  return bytes;
}

// The fused kernels' shared memory (their wide-group form keeps the pairs in the ring).
std::size_t fused_smem(const GemvVariant& v, unsigned threads) {
  std::size_t bytes = threads * kRingLaneVecs * sizeof(uint4);
  if (scales_in_ring(v.code, v.groups, kRingPairs)) {
    bytes += static_cast<std::size_t>(threads) * kRingSlots * pair_words(v.f16_scale, v.zeros) *
             sizeof(uint32_t);
  }
  return bytes;
}

}  // namespace

cudaError_t int_gemv_occupancy(const GemvVariant& variant, int threads, int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      blocks, pick(variant), threads, dynamic_smem(variant, static_cast<unsigned>(threads)));
}

cudaError_t int_gemv_launch(const GemvVariant& variant, const GemvParams& params,
                            cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((params.tiles + params.tpb - 1) / params.tpb);
  const unsigned threads = static_cast<unsigned>(params.tpb * params.wk * 32);
  return cuda_device::launch_chained(pick(variant), blocks, threads, dynamic_smem(variant, threads),
                                     stream, params);
}

cudaError_t int_gemv_launch_fused(const GemvVariant& variant, const GemvParams& params,
                                  const GemvFusion& fusion, cudaStream_t stream) {
  if (variant.code != kU4 || variant.pipe != kGemvRing) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>((params.tiles + params.tpb - 1) / params.tpb);
  const unsigned threads = static_cast<unsigned>(params.tpb * params.wk * 32);
  return cuda_device::launch_chained(pick_fused(variant), blocks, threads,
                                     fused_smem(variant, threads), stream, params, fusion);
}

}  // namespace qlinear::cuda_launch
