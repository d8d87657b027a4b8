// The AVX-512 BF16 micro-kernel of cpu.w4a16.avx512 and cpu.w8a16.avx512 (layout: int_tiles.h).
//
// A packed u32 word holds 8 nibbles. Slot p (0..3) pairs nibble p (low half) with nibble p + 4
// (high half): (word >> 4p) & 0x000F000F | 0x43004300 is, per 16-bit half, the bf16 number
// 128 + nibble, exactly -- one shift and one vpternlogd per 16 columns x 2 nibbles. vdpbf16ps
// multiplies those pairs with the matching pairs of activations (Rows::pairs) and accumulates in
// f32; the 128 per nibble is folded into the zero term at prepare. 8-bit words are the same 8
// nibbles (code = lo + 16 * hi; the x16 lives in the activation pairs), so one kernel serves both.
// Per group: acc = sum code*x over the group, then y += s * acc - s*(z+offset) * sum(x), with s
// and s*(z+offset) formed from the tile's compact scale and zero streams (group_params_avx512.h).
#include "kernels/cpu/int_tiles.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/group_params_avx512.h"

#define QLINEAR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace qlinear::int_tiles {
namespace {

// How far ahead of the decoded step to prefetch (16 steps x 256 bytes).
constexpr int64_t kPrefetchWords = 16 * kTileN;

// kRows activation rows x 64 columns: 4*kRows accumulators, 4 decoded vectors, 1 broadcast.
// One row alone would chain 4 dependent vdpbf16ps per step on each accumulator, so it gets a
// second set (even / odd slots) to hide the latency.
template <int kRows>
QLINEAR_AVX512 void block(const TiledWeights& w, const uint32_t* q, const TileParams& params,
                          const uint32_t* const* x, const float* const* sums, float* const* y) {
  const __m512i mask = _mm512_set1_epi32(0x000F000F);
  const __m512i magic = _mm512_set1_epi32(0x43004300);
  GroupParams gp;
  for (int64_t g = 0; g < w.groups; ++g) {
    load_group_params(params, g, gp);
    constexpr int kSets = kRows == 1 ? 2 : 1;
    __m512 acc[kRows][kSets][4];
    for (int r = 0; r < kRows; ++r) {
      for (int i = 0; i < kSets; ++i) {
        for (int j = 0; j < 4; ++j) acc[r][i][j] = _mm512_setzero_ps();
      }
    }
    const int64_t d_end = (g + 1) * w.group_steps;
    for (int64_t d = g * w.group_steps; d < d_end; ++d) {
      const uint32_t* words = q + d * kTileN;
      if (kRows <= 2) {
        // Decode streams each tile once: run ahead of the hardware prefetcher.
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(words + kPrefetchWords + 16 * j), _MM_HINT_T0);
        }
      }
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        __m512i pairs[4];
        for (int j = 0; j < 4; ++j) {
          // Reloaded per slot (L1 hits) rather than held: 5 rows need 20 accumulators.
          const __m512i raw = _mm512_loadu_si512(words + 16 * j);
          const __m512i shifted = p == 0 ? raw : _mm512_srli_epi32(raw, 4 * p);
          pairs[j] = _mm512_ternarylogic_epi32(shifted, mask, magic, 0xEA);  // (a & b) | c
        }
        for (int r = 0; r < kRows; ++r) {
          const __m512i xp = _mm512_set1_epi32(static_cast<int>(x[r][d * 4 + p]));
          for (int j = 0; j < 4; ++j) {
            acc[r][p % kSets][j] =
                _mm512_dpbf16_ps(acc[r][p % kSets][j], (__m512bh)pairs[j], (__m512bh)xp);
          }
        }
      }
    }
    for (int j = 0; j < 4; ++j) {
      const __m512 s = _mm512_load_ps(gp.s + 16 * j);
      const __m512 sz = _mm512_load_ps(gp.sz + 16 * j);
      for (int r = 0; r < kRows; ++r) {
        __m512 out = _mm512_loadu_ps(y[r] + 16 * j);
        const __m512 sum =
            kSets == 1 ? acc[r][0][j] : _mm512_add_ps(acc[r][0][j], acc[r][kSets - 1][j]);
        out = _mm512_fmadd_ps(sum, s, out);
        out = _mm512_fnmadd_ps(sz, _mm512_set1_ps(sums[r][g]), out);
        _mm512_storeu_ps(y[r] + 16 * j, out);
      }
    }
  }
}

template <int kRows>
QLINEAR_AVX512 void block_at(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r,
                             int64_t r0, float* ytile) {
  const uint32_t* x[kRows];
  const float* sums[kRows];
  float* y[kRows];
  const int64_t o0 = r0 / rows.rows_per_out;
  for (int i = 0; i < kRows; ++i) {
    x[i] = rows.pairs + (r + i) * rows.stride;
    sums[i] = rows.sums + (r + i) * w.groups;
    y[i] = ytile + ((r + i) / rows.rows_per_out - o0) * kTileN;
  }
  block<kRows>(w, w.tile_q(tile), TileParams(w, tile), x, sums, y);
}

}  // namespace

QLINEAR_AVX512 void tile_job_avx512(const TiledWeights& w, const Rows& rows, int64_t tile,
                                    int64_t r0, int64_t r1, float* ytile) {
  // Blocks of at most 5 rows: with 6 (24 accumulators) GCC 12 spilled around every group's
  // epilogue, and 5 measured 4-13% faster at M = 128 g128 (bench/results/cpu.md).
  for_row_blocks<5>(r0, r1, [&](int64_t r, auto count) {
    block_at<decltype(count)::value>(w, rows, tile, r, r0, ytile);
  });
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
