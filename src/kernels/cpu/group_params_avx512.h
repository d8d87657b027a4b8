// AVX-512 loads of a tile's per-group scales and folded zero terms (layout: int_tiles.h): 16
// columns of s in f32 from the tile's f16 / bf16 / f32 store, and sz = s * (z + offset) from its
// u8 zero points (or the symmetric zero), rounded exactly as TiledWeights::group_params does.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/int_tiles.h"

namespace qlinear::int_tiles {

// One tile's scale and zero streams, resolved once per tile.
struct TileParams {
  const void* scales = nullptr;
  const uint8_t* zeros = nullptr;  // nullptr: symmetric
  DType store = DType::kF32;       // f16, bf16 or f32
  float offset = 0.0f;             // the ISA's code offset
  float symmetric = 0.0f;          // z + offset when symmetric

  TileParams(const TiledWeights& w, int64_t tile)
      : scales(w.tile_scales(tile)),
        zeros(w.tile_zeros(tile)),
        store(w.scales.dtype()),
        offset(w.zero_offset),
        symmetric(w.symmetric_term()) {}
};

// s and sz of columns [16 j, 16 j + 16) of group g.
__attribute__((target("avx512f,avx512bw"))) inline void load_group_params(const TileParams& t,
                                                                          int64_t g, int j,
                                                                          __m512& s, __m512& sz) {
  const int64_t at = g * kTileN + 16 * j;
  switch (t.store) {
    case DType::kF16:
      s = _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(t.scales) + at / 16));
      break;
    case DType::kBF16:
      s = _mm512_castsi512_ps(_mm512_slli_epi32(
          _mm512_cvtepu16_epi32(
              _mm256_loadu_si256(static_cast<const __m256i*>(t.scales) + at / 16)),
          16));
      break;
    default:  // f32
      s = _mm512_loadu_ps(static_cast<const float*>(t.scales) + at);
      break;
  }
  __m512 term = _mm512_set1_ps(t.symmetric);
  if (t.zeros != nullptr) {
    const __m512i z =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.zeros + at)));
    term = _mm512_add_ps(_mm512_cvtepi32_ps(z), _mm512_set1_ps(t.offset));
  }
  sz = _mm512_mul_ps(s, term);
}

// All 64 columns of group g into s[64] and sz[64] (64-byte aligned). The micro-kernels call it
// at the start of a group, while their accumulators are not live yet, and read the f32 values in
// the group's epilogue: converting there cost 3-5% at M = 16-128 (registers spilled).
struct alignas(64) GroupParams {
  float s[kTileN];
  float sz[kTileN];
};
__attribute__((target("avx512f,avx512bw"))) inline void load_group_params(const TileParams& t,
                                                                          int64_t g,
                                                                          GroupParams& out) {
  for (int j = 0; j < 4; ++j) {
    __m512 s;
    __m512 sz;
    load_group_params(t, g, j, s, sz);
    _mm512_store_ps(out.s + 16 * j, s);
    _mm512_store_ps(out.sz + 16 * j, sz);
  }
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
