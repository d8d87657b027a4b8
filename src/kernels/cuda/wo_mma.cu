// Device code of the weight-only mma kernels (cuda.int.mma.sm80: int4 / int8 codes;
// cuda.fp8.w8a16.mma.sm80: e4m3 codes), f16 or bf16 activations.
//
// Layout after prepare (one repack kernel on the GPU): the codes of each 16-column tile, K in steps
// of 64 (4-bit) or 32 (8-bit) rows, as one 16-byte vector per lane of a warp, in the exact order of
// mma.m16n8k16's B fragments, so a warp streams 512 contiguous bytes per step and dequantizes in
// registers without shuffles. Inside each 16-row slice of K the rows are permuted (fragment slot
// (t, r, i) of chunk c holds row 8t + 4c + 2r + i of a 32-row block), so that the matching A
// fragments are one 16-byte load per row. Act-order weights are sorted by group at prepare (x is
// gathered in the same order at run time). Scales: [groups, N] as f16 when every scale is exactly
// an f16 (the checkpoints' own precision), else f32; zero points u8 [groups, N].
//
// Run: block = 4 warps x 32 columns (a 128-column tile); K streams through a cp.async pipeline of
// 128-row chunks (codes, the x rows of the tile, scales and zeros of the chunk); each warp
// dequantizes its B fragments in registers (magic-number f16/bf16 conversion, zero point
// subtracted exactly), multiplies (q - z) by x on the tensor cores in f32 and applies the f32 (or
// f16-exact) scale once per 32 rows. M rows in 1, 2 or 4 m16 tiles (M <= 16, 32, 64; above 64,
// blocks of 64 rows). On sm90 a cluster of up to 8 blocks splits K of one tile and reduces its
// partial sums through distributed shared memory in a fixed order (deterministic, no workspace,
// one launch); the split is chosen per call from the tile count and the measured occupancy.
#include <cooperative_groups.h>

#include <cstring>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/mma_sm80.cuh"

namespace qlinear::cuda_launch {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = kWoThreads / 32;
constexpr int kThreads = kWoThreads;
constexpr int kBlockN = kWoBlockN;
constexpr int kChunk = kWoChunk;
constexpr int kKb = kChunk / 32;
constexpr int kXStride = kChunk + 32;  // halves per x row in shared memory (+64 B: no conflicts)

template <int kCode>
constexpr int step_rows() {
  return kCode == kU4 ? 64 : 32;
}

template <int kCode, bool kF16Scale, int kMT>
struct Stage {
  static constexpr int kBBytes = kWarps * 2 * (kChunk / step_rows<kCode>()) * 512;
  static constexpr int kXBytes = kMT * 16 * kXStride * 2;
  static constexpr int kScaleBytes = kKb * kBlockN * (kF16Scale ? 2 : 4);
  static constexpr int kZeroBytes = kCode == kE4M3 ? 0 : kKb * kBlockN;
  static constexpr int kBytes = kBBytes + kXBytes + kScaleBytes + kZeroBytes;
  // Three stages: two chunks in flight per block while one is computed; with 4-bit codes and
  // M <= 16 a stage is 15 KB, so five blocks (20 warps) fit an SM.
  static constexpr int kStages = 3;
  static constexpr int kSmem = kBytes * kStages;
};

using cuda_device::bf16x2_pack;
using cuda_device::bf16x2_sub;
using cuda_device::cp_async16;
using cuda_device::cp_async_commit;
using cuda_device::cp_async_wait;
using cuda_device::f16x2_fma;
using cuda_device::f16x2_sub;
using cuda_device::mma;

__device__ __forceinline__ uint32_t half_bits(float v) {
  const __half h = __float2half_rn(v);
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

// Per (n8 tile) zero-point constants of the dequantization.
struct ZeroConst {
  uint32_t sub;  // f16: 1024+z pairs; bf16 4-bit: 128+z pairs; bf16 8-bit: f32 bits of 2^23+z
  uint32_t fma;  // f16 4-bit only: -(64+z) pairs
};

template <int kCode, bool kBf16>
__device__ __forceinline__ ZeroConst zero_const(int z) {
  ZeroConst c{0, 0};
  if constexpr (kCode == kU4 || kCode == kU8) {
    if constexpr (!kBf16) {
      c.sub = (0x6400u + static_cast<uint32_t>(z)) * 0x10001u;
      if constexpr (kCode == kU4) c.fma = half_bits(-(64.0f + static_cast<float>(z))) * 0x10001u;
    } else if constexpr (kCode == kU4) {
      c.sub = (0x4300u + static_cast<uint32_t>(z)) * 0x10001u;
    } else {
      const float f = 8388608.0f + static_cast<float>(z);
      memcpy(&c.sub, &f, 4);
    }
  }
  return c;
}

// One 4-bit word (both n8 tiles of a 16-column tile, one k16 chunk): b[tile][r].
template <bool kBf16>
__device__ __forceinline__ void dequant_u4(uint32_t q, const ZeroConst (&z)[2],
                                           uint32_t (&b)[2][2]) {
  if constexpr (!kBf16) {
    const uint32_t magic = 0x64006400u;
    const uint32_t sixteenth = 0x2C002C00u;  // 1/16 in f16
    const uint32_t q8 = q >> 8;
    b[0][0] = f16x2_sub((q & 0x000F000Fu) | magic, z[0].sub);
    b[1][0] = f16x2_fma((q & 0x00F000F0u) | magic, sixteenth, z[1].fma);
    b[0][1] = f16x2_sub((q8 & 0x000F000Fu) | magic, z[0].sub);
    b[1][1] = f16x2_fma((q8 & 0x00F000F0u) | magic, sixteenth, z[1].fma);
  } else {
    const uint32_t magic = 0x43004300u;
    b[0][0] = bf16x2_sub((q & 0x000F000Fu) | magic, z[0].sub);
    b[1][0] = bf16x2_sub(((q >> 4) & 0x000F000Fu) | magic, z[1].sub);
    b[0][1] = bf16x2_sub(((q >> 8) & 0x000F000Fu) | magic, z[0].sub);
    b[1][1] = bf16x2_sub(((q >> 12) & 0x000F000Fu) | magic, z[1].sub);
  }
}

// One 8-bit word (one n8 tile, one k16 chunk): b[r]. Bytes: (r0 i0, r1 i0, r0 i1, r1 i1).
template <int kCode, bool kBf16>
__device__ __forceinline__ void dequant_u8(uint32_t q, const ZeroConst& z, uint32_t (&b)[2]) {
  if constexpr (kCode == kE4M3) {
    // e4m3 -> f16 by moving the bit fields: f16 = e4m3 * 2^-8 exactly (subnormals included);
    // the 2^8 is folded into the scales at prepare.
    const uint32_t t0 = q & 0x00FF00FFu;
    const uint32_t t1 = (q >> 8) & 0x00FF00FFu;
    const uint32_t h0 = ((t0 << 8) & 0x80008000u) | ((t0 << 7) & 0x3F803F80u);
    const uint32_t h1 = ((t1 << 8) & 0x80008000u) | ((t1 << 7) & 0x3F803F80u);
    if constexpr (!kBf16) {
      b[0] = h0;
      b[1] = h1;
    } else {
      __half2 x0, x1;
      memcpy(&x0, &h0, 4);
      memcpy(&x1, &h1, 4);
      const float2 f0 = __half22float2(x0);
      const float2 f1 = __half22float2(x1);
      b[0] = bf16x2_pack(f0.x, f0.y);
      b[1] = bf16x2_pack(f1.x, f1.y);
    }
  } else if constexpr (!kBf16) {
    const uint32_t magic = 0x64006400u;
    b[0] = f16x2_sub((q & 0x00FF00FFu) | magic, z.sub);
    b[1] = f16x2_sub(((q >> 8) & 0x00FF00FFu) | magic, z.sub);
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
    b[0] = bf16x2_pack(v[0], v[2]);
    b[1] = bf16x2_pack(v[1], v[3]);
  }
}

// Where one thread's cp.async pieces of a stage come from (computed once per block; a chunk moves
// every source by a constant).
struct Sources {
  const char* b;     // first code piece of chunk 0
  int64_t b_stride;  // bytes between this thread's code pieces
  const char* x;     // first x piece of chunk 0 (row m0 + x_row, column 8 * x_col)
  int64_t x_stride;  // bytes between this thread's x pieces (rows apart)
  int x_row;         // row (in the tile) of the first piece
  int x_col;         // 16-byte column of the pieces
};

template <int kCode, bool kF16Scale, int kMT>
__device__ __forceinline__ Sources sources(const WoParams& p, int tile, int m0) {
  constexpr int kSpc = kChunk / step_rows<kCode>();
  const int tid = threadIdx.x;
  // Code pieces q = tid + r * kThreads: lane, step and sub-tile come from tid, the 16-column tile
  // advances linearly with r (see issue_stage).
  const int lane = tid & 31;
  const int i = (tid >> 5) % kSpc;
  const int sub = (tid / (32 * kSpc)) & 1;
  const int warp = tid / (64 * kSpc);
  const int64_t t16 = static_cast<int64_t>(tile) * 8 + warp * 2 + sub;
  Sources s;
  s.b = static_cast<const char*>(p.w) + ((t16 * p.steps + i) * 32 + lane) * 16;
  // r -> q + r * kThreads: 4-bit (kSpc 2): the tile moves by 2 per r; 8-bit (kSpc 4): by 1.
  s.b_stride = static_cast<int64_t>(kThreads / (32 * kSpc)) * p.steps * 512;
  s.x_col = tid % (kChunk / 8);
  s.x_row = tid / (kChunk / 8);
  s.x = static_cast<const char*>(p.x) +
        (static_cast<int64_t>(m0 + s.x_row) * p.ldx + s.x_col * 8) * 2;
  s.x_stride = static_cast<int64_t>(kThreads / (kChunk / 8)) * p.ldx * 2;
  return s;
}

__device__ __forceinline__ int group_of_kb(const WoParams& p, int kbg) {
  if (p.groups == 1) return 0;
  const int g = p.kb_shift >= 0 ? (kbg >> p.kb_shift) : kbg * 32 / p.group_rows;
  return min(g, p.groups - 1);
}

template <int kCode, bool kF16Scale, int kMT>
__device__ __forceinline__ void issue_stage(const WoParams& p, const Sources& src, char* stage,
                                            int chunk, int tile, int m0) {
  using S = Stage<kCode, kF16Scale, kMT>;
  constexpr int kSpc = kChunk / step_rows<kCode>();
  const int tid = threadIdx.x;
  char* bs = stage;
  char* xs = stage + S::kBBytes;
  char* ss = xs + S::kXBytes;
  char* zs = ss + S::kScaleBytes;
  // Codes: [warp][sub][step][lane] x 16 B.
  constexpr int kBPieces = S::kBBytes / 16;
  const char* b = src.b + static_cast<int64_t>(chunk) * kSpc * 512;
#pragma unroll
  for (int r = 0; r < kBPieces / kThreads; ++r) {
    cp_async16(bs + (tid + r * kThreads) * 16, b + r * src.b_stride, true);
  }
  // x rows m0.. of the chunk (zero beyond M and K).
  constexpr int kXPieces = kMT * 16 * (kChunk / 8);
  const int k = chunk * kChunk + src.x_col * 8;
  const char* x = src.x + static_cast<int64_t>(chunk) * kChunk * 2;
#pragma unroll
  for (int r = 0; r < (kXPieces + kThreads - 1) / kThreads; ++r) {
    const int q = tid + r * kThreads;
    if (kXPieces % kThreads == 0 || q < kXPieces) {
      const int row = src.x_row + r * (kThreads / (kChunk / 8));
      const bool pred = m0 + row < p.M && k < p.K;
      cp_async16(xs + row * (kXStride * 2) + src.x_col * 16, pred ? x + r * src.x_stride : p.x,
                 pred);
    }
  }
  // Scale (and zero-point) rows of the chunk's 32-row blocks.
  constexpr int kSb = kF16Scale ? 2 : 4;
  constexpr int kSPiecesRow = kBlockN * kSb / 16;
  const auto* sc = static_cast<const char*>(p.scales);
  if (tid < kKb * kSPiecesRow) {
    const int row = tid / kSPiecesRow;
    const int col = tid % kSPiecesRow;
    const int grp = group_of_kb(p, chunk * kKb + row);
    cp_async16(ss + row * kBlockN * kSb + col * 16,
               sc + (static_cast<int64_t>(grp) * p.Npad + tile * kBlockN) * kSb + col * 16, true);
  }
  if constexpr (kCode != kE4M3) {
    constexpr int kZPiecesRow = kBlockN / 16;
    if (p.zeros != nullptr && tid < kKb * kZPiecesRow) {
      const int row = tid / kZPiecesRow;
      const int col = tid % kZPiecesRow;
      const int grp = group_of_kb(p, chunk * kKb + row);
      cp_async16(zs + row * kBlockN + col * 16,
                 p.zeros + static_cast<int64_t>(grp) * p.Npad + tile * kBlockN + col * 16, true);
    }
  }
}

template <bool kBf16>
__device__ __forceinline__ void mma_zero(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  const float z = 0.0f;
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%10,%10,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%10,%10,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
  }
}

template <int kCode, bool kBf16, bool kF16Scale, int kMT>
__device__ __forceinline__ void compute_stage(const WoParams& p, const char* stage, int m0,
                                              float (&acc)[kMT][4][4], const ZeroConst (&sym)[2]) {
  using S = Stage<kCode, kF16Scale, kMT>;
  constexpr int kSpc = kChunk / step_rows<kCode>();
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const char* bs = stage;
  const char* xs = stage + S::kBBytes;
  const char* ss = xs + S::kXBytes;
  const char* zs = ss + S::kScaleBytes;
  const int seg = p.seg_kb;
  // (q - z) x summed over a segment of `seg` 32-row blocks (one scale row), then scaled.
  float part[kMT][4][4];
  ZeroConst z[2][2] = {{sym[0], sym[1]}, {sym[0], sym[1]}};
#pragma unroll
  for (int kb = 0; kb < kKb; ++kb) {
    const bool first = (kb & (seg - 1)) == 0;
    if constexpr (kCode != kE4M3) {
      if (first && p.zeros != nullptr) {
#pragma unroll
        for (int sub = 0; sub < 2; ++sub) {
#pragma unroll
          for (int tl = 0; tl < 2; ++tl) {
            const int zv = reinterpret_cast<const uint8_t*>(
                zs)[kb * kBlockN + warp * 32 + sub * 16 + tl * 8 + g];
            z[sub][tl] = zero_const<kCode, kBf16>(zv);
          }
        }
      }
    }
    // B fragments of both 16-column sub-tiles: bf[sub][c][tile][r].
    uint32_t bf[2][2][2][2];
#pragma unroll
    for (int sub = 0; sub < 2; ++sub) {
      const char* base = bs + ((warp * 2 + sub) * kSpc) * 512 + lane * 16;
      if constexpr (kCode == kU4) {
        const uint2 w = *reinterpret_cast<const uint2*>(base + (kb >> 1) * 512 + (kb & 1) * 8);
        uint32_t b[2][2];
        dequant_u4<kBf16>(w.x, z[sub], b);
#pragma unroll
        for (int tl = 0; tl < 2; ++tl) {
          bf[sub][0][tl][0] = b[tl][0];
          bf[sub][0][tl][1] = b[tl][1];
        }
        dequant_u4<kBf16>(w.y, z[sub], b);
#pragma unroll
        for (int tl = 0; tl < 2; ++tl) {
          bf[sub][1][tl][0] = b[tl][0];
          bf[sub][1][tl][1] = b[tl][1];
        }
      } else {
        const uint4 w = *reinterpret_cast<const uint4*>(base + kb * 512);
        const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int c = 0; c < 2; ++c) {
#pragma unroll
          for (int tl = 0; tl < 2; ++tl) {
            uint32_t b[2];
            dequant_u8<kCode, kBf16>(words[c * 2 + tl], z[sub][tl], b);
            bf[sub][c][tl][0] = b[0];
            bf[sub][c][tl][1] = b[1];
          }
        }
      }
    }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      if (m0 + mt * 16 >= p.M) break;
      const bool upper = m0 + mt * 16 + 8 < p.M;
      const char* xr = xs + ((mt * 16 + g) * kXStride + kb * 32 + 8 * t) * 2;
      const uint4 lo = *reinterpret_cast<const uint4*>(xr);
      uint4 hi = make_uint4(0, 0, 0, 0);
      if (upper) hi = *reinterpret_cast<const uint4*>(xr + 8 * kXStride * 2);
      const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y};
      const uint32_t a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const int sub = n >> 1;
        const int tl = n & 1;
        if (first) {
          mma_zero<kBf16>(part[mt][n], a0, bf[sub][0][tl][0], bf[sub][0][tl][1]);
        } else {
          mma<kBf16>(part[mt][n], a0, bf[sub][0][tl][0], bf[sub][0][tl][1]);
        }
        mma<kBf16>(part[mt][n], a1, bf[sub][1][tl][0], bf[sub][1][tl][1]);
      }
    }
    if (((kb + 1) & (seg - 1)) == 0) {
      const int skb = kb + 1 - seg;  // the segment's scale row
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const int col = warp * 32 + n * 8 + 2 * t;
        float2 s;
        if constexpr (kF16Scale) {
          s = __half22float2(*reinterpret_cast<const __half2*>(ss + (skb * kBlockN + col) * 2));
        } else {
          s = *reinterpret_cast<const float2*>(ss + (skb * kBlockN + col) * 4);
        }
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          if (m0 + mt * 16 >= p.M) break;
          float* o = acc[mt][n];
          o[0] = fmaf(part[mt][n][0], s.x, o[0]);
          o[1] = fmaf(part[mt][n][1], s.y, o[1]);
          o[2] = fmaf(part[mt][n][2], s.x, o[2]);
          o[3] = fmaf(part[mt][n][3], s.y, o[3]);
        }
      }
    }
  }
}

__device__ __forceinline__ void store_out(const WoParams& p, int row, int col, float v) {
  if (row < p.M && col < p.N) {
    if (p.bias != nullptr) v += p.bias[col];
    cuda_device::store_element(p.y, static_cast<int64_t>(row) * p.ldy + col, v, p.out_code);
  }
}

template <int kCode, bool kBf16, bool kF16Scale, int kMT>
__global__ void __launch_bounds__(kThreads) wo_mma_kernel(const WoParams p) {
  using S = Stage<kCode, kF16Scale, kMT>;
  extern __shared__ __align__(16) char smem[];
  const int split = p.split;
  const int rank = static_cast<int>(blockIdx.x) % split;
  const int tile = static_cast<int>(blockIdx.x) / split;
  const int m0 = static_cast<int>(blockIdx.y) * kMT * 16;
  const int c_begin = static_cast<int>(static_cast<int64_t>(rank) * p.chunks / split);
  const int c_end = static_cast<int>(static_cast<int64_t>(rank + 1) * p.chunks / split);

  ZeroConst sym[2];
  sym[0] = zero_const<kCode, kBf16>(p.sym_zero);
  sym[1] = sym[0];
  float acc[kMT][4][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int n = 0; n < 4; ++n) {
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][n][r] = 0.0f;
    }
  }

  const Sources src = sources<kCode, kF16Scale, kMT>(p, tile, m0);
#pragma unroll
  for (int s = 0; s < S::kStages - 1; ++s) {
    if (c_begin + s < c_end) {
      issue_stage<kCode, kF16Scale, kMT>(p, src, smem + s * S::kBytes, c_begin + s, tile, m0);
    }
    cp_async_commit();
  }
  for (int c = c_begin; c < c_end; ++c) {
    cp_async_wait<S::kStages - 2>();
    __syncthreads();
    const int next = c + S::kStages - 1;
    if (next < c_end) {
      issue_stage<kCode, kF16Scale, kMT>(p, src, smem + ((next - c_begin) % S::kStages) * S::kBytes,
                                         next, tile, m0);
    }
    cp_async_commit();
    compute_stage<kCode, kBf16, kF16Scale, kMT>(p, smem + ((c - c_begin) % S::kStages) * S::kBytes,
                                                m0, acc, sym);
  }
  cp_async_wait<0>();
  __syncthreads();

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  if (split == 1) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const int col = tile * kBlockN + warp * 32 + n * 8 + 2 * t;
        const int row = m0 + mt * 16 + g;
        store_out(p, row, col, acc[mt][n][0]);
        store_out(p, row, col + 1, acc[mt][n][1]);
        store_out(p, row + 8, col, acc[mt][n][2]);
        store_out(p, row + 8, col + 1, acc[mt][n][3]);
      }
    }
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Partial sums of the cluster's blocks, reduced in rank order by slices (deterministic).
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int n = 0; n < 4; ++n) {
#pragma unroll
      for (int r = 0; r < 4; ++r)
        red[(((warp * kMT + mt) * 4 + n) * 4 + r) * 32 + lane] = acc[mt][n][r];
    }
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  constexpr int kElems = kWarps * kMT * 16 * 32;
  const int e_begin = rank * kElems / split;
  const int e_end = (rank + 1) * kElems / split;
  for (int e = e_begin + static_cast<int>(threadIdx.x); e < e_end; e += kThreads) {
    float v = 0.0f;
    for (int q = 0; q < split; ++q) v += cluster.map_shared_rank(red, q)[e];
    const int l = e & 31;
    const int r = (e >> 5) & 3;
    const int n = (e >> 7) & 3;
    const int mt = (e >> 9) % kMT;
    const int w = (e >> 9) / kMT;
    const int row = m0 + mt * 16 + (l >> 2) + (r >= 2 ? 8 : 0);
    const int col = tile * kBlockN + w * 32 + n * 8 + 2 * (l & 3) + (r & 1);
    store_out(p, row, col, v);
  }
  cluster.sync();
#endif
}

// --- prepare-time repack (one thread per output word) ---

__global__ void repack_kernel(int code_kind, const uint32_t* qweight, const uint8_t* fp8,
                              const int32_t* perm, int bits, int64_t K, int64_t N, int64_t tiles16,
                              int64_t steps, uint32_t* out) {
  const int64_t total = tiles16 * steps * 128;
  const int pf = bits > 0 ? 32 / bits : 1;
  const uint32_t mask = bits > 0 ? (1u << bits) - 1u : 0xFFu;
  const int step = code_kind == kU4 ? 64 : 32;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(o & 3);
    const int lane = static_cast<int>((o >> 2) & 31);
    const int64_t s = (o >> 7) % steps;
    const int64_t t16 = (o >> 7) / steps;
    const int g = lane >> 2;
    const int t = lane & 3;
    auto fetch = [&](int64_t kp, int64_t n) -> uint32_t {
      if (kp >= K || n >= N) return 0;
      if (code_kind == kE4M3) return fp8[n * K + kp];
      const int64_t k = perm != nullptr ? perm[kp] : kp;
      return (qweight[(k / pf) * N + n] >> (bits * (k % pf))) & mask;
    };
    uint32_t word = 0;
    if (code_kind == kU4) {
      const int h = j >> 1;
      const int c = j & 1;
      for (int nib = 0; nib < 8; ++nib) {
        const int tl = nib & 1;
        const int r = (nib >> 1) & 1;
        const int i = nib >> 2;
        const int64_t kp = s * step + h * 32 + 8 * t + 4 * c + 2 * r + i;
        const int64_t n = t16 * 16 + tl * 8 + g;
        word |= fetch(kp, n) << (4 * nib);
      }
    } else {
      const int c = j >> 1;
      const int tl = j & 1;
      for (int byte = 0; byte < 4; ++byte) {
        const int r = byte & 1;
        const int i = byte >> 1;
        const int64_t kp = s * step + 8 * t + 4 * c + 2 * r + i;
        const int64_t n = t16 * 16 + tl * 8 + g;
        word |= fetch(kp, n) << (8 * byte);
      }
    }
    out[o] = word;
  }
}

// x gathered (act-order), re-laid (unaligned views) or zero-padded into [M, Kpad].
__global__ void stage_x_kernel(const void* x, int64_t ldx, const int32_t* perm, int64_t M,
                               int64_t K, int64_t Kpad, void* out) {
  const int64_t total = M * Kpad;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = i / Kpad;
    const int64_t kp = i - m * Kpad;
    uint16_t v = 0;
    if (kp < K) {
      const int64_t k = perm != nullptr ? perm[kp] : kp;
      v = static_cast<const uint16_t*>(x)[m * ldx + k];
    }
    static_cast<uint16_t*>(out)[i] = v;
  }
}

template <int kCode, bool kBf16, bool kF16Scale, int kMT>
struct Kernel {
  static constexpr auto fn = wo_mma_kernel<kCode, kBf16, kF16Scale, kMT>;
  static constexpr int smem = Stage<kCode, kF16Scale, kMT>::kSmem;
};

using KernelFn = void (*)(WoParams);

template <int kCode, bool kBf16, bool kF16Scale>
KernelFn pick_mt(int mt, int& smem) {
  if (mt == 1) {
    smem = Kernel<kCode, kBf16, kF16Scale, 1>::smem;
    return Kernel<kCode, kBf16, kF16Scale, 1>::fn;
  }
  if (mt == 2) {
    smem = Kernel<kCode, kBf16, kF16Scale, 2>::smem;
    return Kernel<kCode, kBf16, kF16Scale, 2>::fn;
  }
  smem = Kernel<kCode, kBf16, kF16Scale, 4>::smem;
  return Kernel<kCode, kBf16, kF16Scale, 4>::fn;
}

KernelFn pick(const WoVariant& v, int& smem) {
  if (v.code == kU4) {
    if (v.bf16)
      return v.f16_scale ? pick_mt<kU4, true, true>(v.mt, smem)
                         : pick_mt<kU4, true, false>(v.mt, smem);
    return v.f16_scale ? pick_mt<kU4, false, true>(v.mt, smem)
                       : pick_mt<kU4, false, false>(v.mt, smem);
  }
  if (v.code == kU8) {
    if (v.bf16)
      return v.f16_scale ? pick_mt<kU8, true, true>(v.mt, smem)
                         : pick_mt<kU8, true, false>(v.mt, smem);
    return v.f16_scale ? pick_mt<kU8, false, true>(v.mt, smem)
                       : pick_mt<kU8, false, false>(v.mt, smem);
  }
  return v.bf16 ? pick_mt<kE4M3, true, false>(v.mt, smem)
                : pick_mt<kE4M3, false, false>(v.mt, smem);
}

}  // namespace

cudaError_t wo_mma_setup(WoVariant& variant) {
  int smem = 0;
  KernelFn fn = pick(variant, smem);
  variant.smem = smem;
  cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&variant.occupancy, fn, kThreads,
                                                       static_cast<std::size_t>(smem));
}

cudaError_t wo_mma_launch(const WoVariant& variant, const WoParams& params, unsigned tiles,
                          unsigned row_blocks, cudaStream_t stream) {
  int smem = 0;
  KernelFn fn = pick(variant, smem);
  const dim3 grid(tiles * static_cast<unsigned>(params.split), row_blocks);
  if (params.split == 1) {
    fn<<<grid, kThreads, smem, stream>>>(params);
    return cudaGetLastError();
  }
  if (params.split > 8) {
    const cudaError_t e =
        cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return e;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(params.split);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, fn, params);
}

cudaError_t wo_repack(int code, const uint32_t* qweight, const uint8_t* fp8, const int32_t* perm,
                      int bits, int64_t K, int64_t N, int64_t tiles16, int64_t steps, uint32_t* out,
                      cudaStream_t stream) {
  repack_kernel<<<cuda_device::grid_for(tiles16 * steps * 128), 256, 0, stream>>>(
      code, qweight, fp8, perm, bits, K, N, tiles16, steps, out);
  return cudaGetLastError();
}

cudaError_t wo_stage_x(const void* x, int64_t ldx, const int32_t* perm, int64_t M, int64_t K,
                       int64_t Kpad, void* out, cudaStream_t stream) {
  stage_x_kernel<<<cuda_device::grid_for(M * Kpad), 256, 0, stream>>>(x, ldx, perm, M, K, Kpad,
                                                                      out);
  return cudaGetLastError();
}

}  // namespace qlinear::cuda_launch
