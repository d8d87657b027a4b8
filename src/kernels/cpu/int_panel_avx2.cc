// The AVX2 + FMA panel engine of cpu.w4a16.avx2 and cpu.w8a16.avx2 for prefill (layout:
// int_tiles.h).
//
// Per chunk of kChunkRows K rows of a 64-column tile, the codes are dequantized once into an
// L1-resident f32 panel, w = s * code - s * z (one rounding, as the blas family's dequantization),
// and every activation row of the job multiplies it with a register-blocked FMA kernel: 6 rows x
// 16 columns, 12 ymm accumulators, one broadcast per row and k. The inline AVX2 micro-kernel
// re-decodes each code for every 2 rows; dequantizing whole column blocks for cblas_sgemm writes
// and reads every weight as f32 through memory on each call.
#include "kernels/cpu/int_tiles.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/group_params_avx2.h"

#define QLINEAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace qlinear::int_tiles {
namespace {

// 64 K rows x 64 columns x 4 bytes = 16 KiB: the panel and the rows' x stay in L1.
constexpr int64_t kChunkRows = 64;
constexpr int kMaxRows = 6;

// panel [k1 - k0][64] = s * code - sz for K rows [k0, k1) of the tile (k0, k1 whole words).
QLINEAR_AVX2 void dequantize_chunk(const TiledWeights& w, int64_t tile, int64_t k0, int64_t k1,
                                   float* panel) {
  const int rows_per_word = 32 / w.bits;
  const int64_t group_size = w.K / w.groups;
  const __m256i mask = _mm256_set1_epi32((1 << w.bits) - 1);
  const uint32_t* q = w.tile_q(tile);
  alignas(32) float s[kTileN];
  alignas(32) float sz[kTileN];
  int64_t loaded = -1;
  for (int64_t d = k0 / rows_per_word; d < k1 / rows_per_word; ++d) {
    const int64_t g = d * rows_per_word / group_size;
    if (g != loaded) {
      load_group_params_avx2(w, tile, g, 0, kTileN, s, sz);
      loaded = g;
    }
    const uint32_t* words = q + d * kTileN;
    float* out = panel + (d * rows_per_word - k0) * kTileN;
    for (int j = 0; j < kTileN / 8; ++j) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * j));
      const __m256 sv = _mm256_load_ps(s + 8 * j);
      const __m256 szv = _mm256_load_ps(sz + 8 * j);
      for (int i = 0; i < rows_per_word; ++i) {
        const __m256i code = _mm256_and_si256(_mm256_srli_epi32(raw, w.bits * i), mask);
        _mm256_store_ps(out + i * kTileN + 8 * j,
                        _mm256_fmsub_ps(_mm256_cvtepi32_ps(code), sv, szv));
      }
    }
  }
}

// y[r][16 c0 .. 16 c0 + 16) += x[r][k0 .. k0 + rows) . panel for kRows rows.
template <int kRows>
QLINEAR_AVX2 void panel_block(const float* panel, int64_t rows, int64_t c0, const float* const* x,
                              float* const* y) {
  // Every loop over rows fully unrolled: the 2 * kRows accumulators stay in registers.
  __m256 acc[kRows][2];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float* wp = panel + 16 * c0;
  for (int64_t k = 0; k < rows; ++k, wp += kTileN) {
    const __m256 w0 = _mm256_load_ps(wp);
    const __m256 w1 = _mm256_load_ps(wp + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 xb = _mm256_broadcast_ss(x[r] + k);
      acc[r][0] = _mm256_fmadd_ps(w0, xb, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(w1, xb, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    float* out = y[r] + 16 * c0;
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), acc[r][0]));
    _mm256_storeu_ps(out + 8, _mm256_add_ps(_mm256_loadu_ps(out + 8), acc[r][1]));
  }
}

}  // namespace

QLINEAR_AVX2 void tile_job_panel_avx2(const TiledWeights& w, const Rows& rows, int64_t tile,
                                      int64_t r0, int64_t r1, float* ytile) {
  alignas(32) float panel[kChunkRows * kTileN];
  for (int64_t k0 = 0; k0 < w.K; k0 += kChunkRows) {
    const int64_t k1 = std::min(w.K, k0 + kChunkRows);
    dequantize_chunk(w, tile, k0, k1, panel);
    for (int64_t c0 = 0; c0 < kTileN / 16; ++c0) {
      for_row_blocks<kMaxRows>(r0, r1, [&](int64_t r, auto count) {
        constexpr int kRows = decltype(count)::value;
        const float* x[kRows];
        float* y[kRows];
        for (int i = 0; i < kRows; ++i) {
          x[i] = rows.values + (r + i) * w.K + k0;
          y[i] = ytile + (r + i - r0) * kTileN;
        }
        panel_block<kRows>(panel, k1 - k0, c0, x, y);
      });
    }
  }
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
