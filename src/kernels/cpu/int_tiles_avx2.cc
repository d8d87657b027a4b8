// The AVX2 + FMA micro-kernel of cpu.w4a16.avx2 and cpu.w8a16.avx2 (layout: int_tiles.h).
//
// f32 all the way (no activation rounding). Code field i of a word (F = 32/bits fields) is
// decoded as cvt(word & (mask << bits*i)) = code * 2^(bits*i), exact in f32, so the shift is
// skipped and the activation carries 2^-(bits*i) instead (Rows::values); the last field is
// cvt(word >> (32 - bits)). Work unit: 2 rows x 32 columns (8 accumulators, 4 words kept in
// registers).
#include "kernels/cpu/int_tiles.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/group_params_avx2.h"

#define QLINEAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace qlinear::int_tiles {
namespace {

template <int kRows, int kBits>
QLINEAR_AVX2 void block(const TiledWeights& w, int64_t tile, int64_t half, const float* const* x,
                        const float* const* sums, float* const* y) {
  const uint32_t* q = w.tile_q(tile) + 32 * half;
  for (int64_t g = 0; g < w.groups; ++g) {
    __m256 acc[kRows][4];
    for (int r = 0; r < kRows; ++r) {
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
    }
    const int64_t d_end = (g + 1) * w.group_steps;
    for (int64_t d = g * w.group_steps; d < d_end; ++d) {
      const uint32_t* words = q + d * kTileN;
      __m256i raw[4];
      for (int j = 0; j < 4; ++j) {
        raw[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * j));
      }
      constexpr int kFields = 32 / kBits;
      for (int i = 0; i < kFields; ++i) {
        __m256 xv[kRows];
        for (int r = 0; r < kRows; ++r) xv[r] = _mm256_broadcast_ss(x[r] + d * 8 + i);
        const __m256i field =
            _mm256_set1_epi32(static_cast<int>(((1u << kBits) - 1) << (kBits * i)));
        for (int j = 0; j < 4; ++j) {
          const __m256i bits = i == kFields - 1 ? _mm256_srli_epi32(raw[j], 32 - kBits)
                                                : _mm256_and_si256(raw[j], field);
          const __m256 code = _mm256_cvtepi32_ps(bits);
          for (int r = 0; r < kRows; ++r) acc[r][j] = _mm256_fmadd_ps(code, xv[r], acc[r][j]);
        }
      }
    }
    alignas(32) float scales[32];
    alignas(32) float zeros[32];
    load_group_params_avx2(w, tile, g, 32 * half, 32, scales, zeros);
    for (int j = 0; j < 4; ++j) {
      const __m256 s = _mm256_load_ps(scales + 8 * j);
      const __m256 sz = _mm256_load_ps(zeros + 8 * j);
      for (int r = 0; r < kRows; ++r) {
        __m256 out = _mm256_loadu_ps(y[r] + 8 * j);
        out = _mm256_fmadd_ps(acc[r][j], s, out);
        out = _mm256_fnmadd_ps(sz, _mm256_set1_ps(sums[r][g]), out);
        _mm256_storeu_ps(y[r] + 8 * j, out);
      }
    }
  }
}

template <int kRows>
QLINEAR_AVX2 void block_at(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r,
                           int64_t r0, float* ytile) {
  const float* x[kRows];
  const float* sums[kRows];
  for (int i = 0; i < kRows; ++i) {
    x[i] = rows.values + (r + i) * w.steps * 8;
    sums[i] = rows.sums + (r + i) * w.groups;
  }
  // Two halves of 32 columns: each is its own stream of 128-byte runs.
  for (int64_t half = 0; half < 2; ++half) {
    float* y[kRows];
    for (int i = 0; i < kRows; ++i) y[i] = ytile + (r + i - r0) * kTileN + 32 * half;
    if (w.bits == 4) {
      block<kRows, 4>(w, tile, half, x, sums, y);
    } else {
      block<kRows, 8>(w, tile, half, x, sums, y);
    }
  }
}

}  // namespace

QLINEAR_AVX2 void tile_job_avx2(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0,
                                int64_t r1, float* ytile) {
  int64_t r = r0;
  for (; r + 2 <= r1; r += 2) block_at<2>(w, rows, tile, r, r0, ytile);
  if (r < r1) block_at<1>(w, rows, tile, r, r0, ytile);
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
