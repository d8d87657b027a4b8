// AVX2 + F16C loads of a tile's per-group scales and folded zero terms (layout: int_tiles.h):
// s and sz = s * (z + offset) in f32 for a run of columns of one group, rounded exactly as
// TiledWeights::group_params (the portable loop) does.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/int_tiles.h"

namespace qlinear::int_tiles {

// The f32 scales of the 8 consecutive entries at `at` of a tile's stored scales (f16, bf16 or
// f32 [groups, 64]: see TiledWeights::tile_scales), exactly as load_as_f32 converts them.
__attribute__((target("avx2,fma,f16c"))) inline __m256 load_scales8_avx2(const TiledWeights& w,
                                                                         const void* scales,
                                                                         int64_t at) {
  switch (w.scales.dtype()) {
    case DType::kF16:
      return _mm256_cvtph_ps(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(scales) + at)));
    case DType::kBF16:
      return _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(
              reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(scales) + at))),
          16));
    default:  // f32
      return _mm256_loadu_ps(static_cast<const float*>(scales) + at);
  }
}

// Columns [c0, c0 + count) of group g of `tile` into s[count] and sz[count];
// c0 and count multiples of 8.
__attribute__((target("avx2,fma,f16c"))) inline void load_group_params_avx2(const TiledWeights& w,
                                                                            int64_t tile, int64_t g,
                                                                            int64_t c0,
                                                                            int64_t count, float* s,
                                                                            float* sz) {
  const void* scales = w.tile_scales(tile);
  const uint8_t* zeros = w.tile_zeros(tile);
  const __m256 offset = _mm256_set1_ps(w.zero_offset);
  const __m256 symmetric = _mm256_set1_ps(w.symmetric_term());
  for (int64_t c = 0; c < count; c += 8) {
    const int64_t at = g * kTileN + c0 + c;
    const __m256 sv = load_scales8_avx2(w, scales, at);
    __m256 term = symmetric;
    if (zeros != nullptr) {
      const __m256i z =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zeros + at)));
      term = _mm256_add_ps(_mm256_cvtepi32_ps(z), offset);
    }
    _mm256_storeu_ps(s + c, sv);
    _mm256_storeu_ps(sz + c, _mm256_mul_ps(sv, term));
  }
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
