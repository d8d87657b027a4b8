// The AVX-512 VNNI micro-kernel of cpu.w4a8.avx512vnni and cpu.w8a8.avx512vnni (layout and math:
// int_a8_tiles.h). vpdpbusd multiplies 4 unsigned weight codes by 4 signed int8 activations per
// 32-bit lane and adds them to an int32 accumulator: 64 products per instruction, twice as many as
// vdpbf16ps, and 4-bit codes need only an AND (even rows) or a shift + AND (odd rows) to become
// bytes; 8-bit codes need no decoding at all.
#include "kernels/cpu/int_a8_tiles.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "kernels/common/activation_quant.h"
#include "kernels/cpu/group_params_avx512.h"

#define QLINEAR_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni,fma")))

namespace qlinear::int_a8 {
namespace {

using int_tiles::GroupParams;
using int_tiles::kTileN;
using int_tiles::load_group_params;
using int_tiles::TiledWeights;
using int_tiles::TileParams;

// How far ahead of the current step to prefetch (16 steps x 256 bytes), for decode.
constexpr int64_t kPrefetchWords = 16 * kTileN;

// kRows activation rows x 64 columns. One row gets separate accumulators for the even and odd
// nibble products (two chains per column) to hide vpdpbusd's latency.
template <int kRows, int kBits>
QLINEAR_AVX512_VNNI void block(const TiledWeights& w, const uint32_t* q, const TileParams& params,
                               const uint32_t* const* x, const float* const* sx,
                               const float* const* qsum, float* const* y) {
  constexpr int kQuads = kBits == 4 ? 2 : 1;
  constexpr int kSets = kRows == 1 && kBits == 4 ? 2 : 1;
  const __m512i nibbles = _mm512_set1_epi32(0x0F0F0F0F);
  GroupParams gp;
  for (int64_t g = 0; g < w.groups; ++g) {
    load_group_params(params, g, gp);
    __m512i acc[kRows][kSets][4];
    for (int r = 0; r < kRows; ++r) {
      for (int s = 0; s < kSets; ++s) {
        for (int j = 0; j < 4; ++j) acc[r][s][j] = _mm512_setzero_si512();
      }
    }
    const int64_t d_end = (g + 1) * w.group_steps;
    for (int64_t d = g * w.group_steps; d < d_end; ++d) {
      const uint32_t* words = q + d * kTileN;
      if (kRows <= 2) {
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(words + kPrefetchWords + 16 * j), _MM_HINT_T0);
        }
      }
      __m512i even[4];
      __m512i odd[4];
      for (int j = 0; j < 4; ++j) {
        const __m512i raw = _mm512_loadu_si512(words + 16 * j);
        if constexpr (kBits == 4) {
          even[j] = _mm512_and_si512(raw, nibbles);
          odd[j] = _mm512_and_si512(_mm512_srli_epi32(raw, 4), nibbles);
        } else {
          even[j] = raw;
          odd[j] = raw;  // unused
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const uint32_t* xr = x[r] + d * kQuads;
        const __m512i xe = _mm512_set1_epi32(static_cast<int>(xr[0]));
        for (int j = 0; j < 4; ++j) acc[r][0][j] = _mm512_dpbusd_epi32(acc[r][0][j], even[j], xe);
        if constexpr (kBits == 4) {
          const __m512i xo = _mm512_set1_epi32(static_cast<int>(xr[1]));
          for (int j = 0; j < 4; ++j) {
            acc[r][kSets - 1][j] = _mm512_dpbusd_epi32(acc[r][kSets - 1][j], odd[j], xo);
          }
        }
      }
    }
    for (int j = 0; j < 4; ++j) {
      const __m512 s = _mm512_load_ps(gp.s + 16 * j);
      const __m512 sz = _mm512_load_ps(gp.sz + 16 * j);
      for (int r = 0; r < kRows; ++r) {
        const __m512i sum =
            kSets == 1 ? acc[r][0][j] : _mm512_add_epi32(acc[r][0][j], acc[r][kSets - 1][j]);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), s);
        v = _mm512_fnmadd_ps(sz, _mm512_set1_ps(qsum[r][g]), v);
        const __m512 out = _mm512_loadu_ps(y[r] + 16 * j);
        _mm512_storeu_ps(y[r] + 16 * j, _mm512_fmadd_ps(v, _mm512_set1_ps(sx[r][g]), out));
      }
    }
  }
}

template <int kRows>
QLINEAR_AVX512_VNNI void block_at(const TiledWeights& w, const A8Rows& rows, int64_t tile,
                                  int64_t r, int64_t r0, float* ytile) {
  const uint32_t* x[kRows];
  const float* sx[kRows];
  const float* qsum[kRows];
  float* y[kRows];
  for (int i = 0; i < kRows; ++i) {
    x[i] = rows.quads + (r + i) * w.steps * rows.quads_per_step;
    sx[i] = rows.scales + (r + i) * w.groups;
    qsum[i] = rows.qsums + (r + i) * w.groups;
    y[i] = ytile + (r + i - r0) * kTileN;
  }
  if (w.bits == 4) {
    block<kRows, 4>(w, w.tile_q(tile), TileParams(w, tile), x, sx, qsum, y);
  } else {
    block<kRows, 8>(w, w.tile_q(tile), TileParams(w, tile), x, sx, qsum, y);
  }
}

}  // namespace

QLINEAR_AVX512_VNNI void tile_job_vnni(const TiledWeights& w, const A8Rows& rows, int64_t tile,
                                       int64_t r0, int64_t r1, float* ytile) {
  int_tiles::for_row_blocks<4>(r0, r1, [&](int64_t r, auto count) {
    block_at<decltype(count)::value>(w, rows, tile, r, r0, ytile);
  });
}

QLINEAR_AVX512_VNNI void quantize_rows_avx512(const float* x, int64_t m0, int64_t m1, int64_t K,
                                              int64_t group_size, int8_t* codes, float* scales,
                                              float* qsums) {
  const int64_t groups = K / group_size;
  const __m512 infinity = _mm512_set1_ps(std::numeric_limits<float>::infinity());
  const __m512i lo = _mm512_set1_epi32(-127);
  const __m512i hi = _mm512_set1_epi32(127);
  for (int64_t m = m0; m < m1; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* xs = x + m * K + g * group_size;
      int8_t* out = codes + m * K + g * group_size;
      __m512 absmax = _mm512_setzero_ps();
      __mmask16 nonfinite = 0;
      for (int64_t i = 0; i < group_size; i += 16) {
        const __mmask16 live =
            _cvtu32_mask16(group_size - i >= 16 ? 0xFFFFu : (1u << (group_size - i)) - 1u);
        const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(live, xs + i));
        // Not below infinity (infinity itself, or NaN: unordered) marks the group non-finite.
        nonfinite |= _mm512_mask_cmp_ps_mask(live, a, infinity, _CMP_NLT_UQ);
        absmax = _mm512_max_ps(absmax, a);
      }
      float* scale = scales + m * groups + g;
      if (nonfinite != 0) {  // as the reference: NaN scale, zero codes
        *scale = std::numeric_limits<float>::quiet_NaN();
        std::fill(out, out + group_size, int8_t{0});
        qsums[m * groups + g] = 0.0f;
        continue;
      }
      *scale = std::max(_mm512_reduce_max_ps(absmax) / 127.0f, kInt8ActScaleFloor);
      const __m512 s = _mm512_set1_ps(*scale);
      __m512i sum = _mm512_setzero_si512();
      for (int64_t i = 0; i < group_size; i += 16) {
        const __mmask16 live =
            _cvtu32_mask16(group_size - i >= 16 ? 0xFFFFu : (1u << (group_size - i)) - 1u);
        // x / s rounded to nearest even by the default MXCSR mode, as std::nearbyint.
        __m512i q = _mm512_cvtps_epi32(_mm512_div_ps(_mm512_maskz_loadu_ps(live, xs + i), s));
        q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
        _mm512_mask_cvtsepi32_storeu_epi8(out + i, live, q);
        sum = _mm512_add_epi32(sum, _mm512_maskz_mov_epi32(live, q));
      }
      qsums[m * groups + g] = static_cast<float>(_mm512_reduce_add_epi32(sum));
    }
  }
}

}  // namespace qlinear::int_a8

#else

namespace qlinear::int_a8 {
// Not x86-64: check() rejects the kernels before any run.
void tile_job_vnni(const int_tiles::TiledWeights&, const A8Rows&, int64_t, int64_t, int64_t,
                   float*) {}
void quantize_rows_avx512(const float*, int64_t, int64_t, int64_t, int64_t, int8_t*, float*,
                          float*) {}
}  // namespace qlinear::int_a8

#endif  // __x86_64__
