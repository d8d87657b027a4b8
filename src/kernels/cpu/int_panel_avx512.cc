// The "decode once, reuse for all rows" engine of cpu.w4a16.avx512 and cpu.w8a16.avx512
// (layout: int_tiles.h), used from kPanelMinRows4/8 activation rows on, and the avx512
// activation rows of both engines.
//
// Per job (one 64-column tile, a chunk of activation rows) and per K chunk of kChunkRows rows,
// the tile's codes are decoded once into a bf16 panel [pairs][64 columns] of u32 pairs (16 KiB:
// stays in L1), then every block of up to 6 rows runs over it: per pair, 4 panel loads and 6
// broadcasts feed 24 vdpbf16ps into 24 accumulators. Every decoded value is exact:
//   4 bits: pair p of word d holds nibbles p (low half) and p + 4 (high half) as the bf16 numbers
//           128 + nibble (shift + vpternlogd, as the inline kernel); the rows pair activations
//           (8d + p, 8d + p + 4) and the 128 is folded into the zero term at prepare.
//   8 bits: a code c (0..255) becomes f32 by vcvtdq2ps; with at most 8 significant bits the low
//           16 bits of that f32 are zero, so its top half is bf16(c) exactly: pair (code of row
//           2i, code of row 2i+1) = (f32(c0) >> 16) | f32(c1), one product per code (the inline
//           kernel needs two, lo + 16 * hi). Offset 0 here against kAvx512Offset8 in the prepared
//           zero terms: the epilogue uses sz - kAvx512Offset8 * s (one fma, one rounding).
// Per group segment: y += s * acc, and once per group y -= sz * sum(x over the group).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/group_params_avx512.h"
#include "kernels/cpu/int_tiles.h"
#include "qlinear/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <omp.h>

#define QLINEAR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace qlinear::int_tiles {
namespace {

constexpr int64_t kChunkRows = kPanelChunkRows;
constexpr int64_t kChunkPairs = kChunkRows / 2;
constexpr int kMaxRows = 6;

struct Chunk {
  const uint32_t* panel;  // [p1 - p0][kTileN] bf16 pairs
  int64_t p0;             // first pair (global pair index: rows 2*p0 ..)
  int64_t p1;
  int64_t group_pairs;       // pairs per group (even)
  const TileParams* params;  // the tile's scales and zero points
};

// kRows activation rows over one chunk, one group segment at a time.
template <int kRows, bool kFix>
QLINEAR_AVX512 void panel_rows(const Chunk& c, const uint32_t* const* x, const float* const* sums,
                               float* const* y) {
  // One row alone would chain every pair's vdpbf16ps on the same 4 accumulators: a second set.
  constexpr int kSets = kRows == 1 ? 2 : 1;
  for (int64_t p = c.p0; p < c.p1;) {
    const int64_t g = p / c.group_pairs;
    const int64_t end = std::min(c.p1, (g + 1) * c.group_pairs);
    GroupParams gp;
    load_group_params(*c.params, g, gp);
    // Every loop over rows / sets / columns fully unrolled: the accumulators stay in registers
    // through the epilogue too.
    __m512 acc[kRows][kSets][4];
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
      for (int i = 0; i < kSets; ++i) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[r][i][j] = _mm512_setzero_ps();
      }
    }
    const uint32_t* wp = c.panel + (p - c.p0) * kTileN;
    // Segments are whole words: an even number of pairs. One pair per iteration keeps the 24
    // accumulators in place (unrolled by 2, GCC copies registers between the halves).
    constexpr int kStep = kSets;
    for (int64_t q = p; q < end; q += kStep, wp += kStep * kTileN) {
#pragma GCC unroll 2
      for (int h = 0; h < kStep; ++h) {
        __m512bh wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          wv[j] = (__m512bh)_mm512_load_si512(wp + h * kTileN + 16 * j);
        }
#pragma GCC unroll 6
        for (int r = 0; r < kRows; ++r) {
          const __m512bh xp = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r][q + h]));
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) acc[r][h][j] = _mm512_dpbf16_ps(acc[r][h][j], wv[j], xp);
        }
      }
    }
    const bool first = p == g * c.group_pairs;
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m512 s = _mm512_load_ps(gp.s + 16 * j);
      __m512 sz = _mm512_load_ps(gp.sz + 16 * j);
      if constexpr (kFix) sz = _mm512_fnmadd_ps(_mm512_set1_ps(kAvx512Offset8), s, sz);
#pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) {
        __m512 out = _mm512_loadu_ps(y[r] + 16 * j);
        const __m512 sum =
            kSets == 1 ? acc[r][0][j] : _mm512_add_ps(acc[r][0][j], acc[r][kSets - 1][j]);
        out = _mm512_fmadd_ps(sum, s, out);
        if (first) out = _mm512_fnmadd_ps(sz, _mm512_set1_ps(sums[r][g]), out);
        _mm512_storeu_ps(y[r] + 16 * j, out);
      }
    }
    p = end;
  }
}

using PanelFn = void (*)(const Chunk&, const uint32_t* const*, const float* const*, float* const*);

template <bool kFix>
constexpr PanelFn kPanelFns[kMaxRows] = {&panel_rows<1, kFix>, &panel_rows<2, kFix>,
                                         &panel_rows<3, kFix>, &panel_rows<4, kFix>,
                                         &panel_rows<5, kFix>, &panel_rows<6, kFix>};

// Words [d0, d1) of a 4-bit tile into pairs 4*(d - d0) + p.
QLINEAR_AVX512 void decode4(const uint32_t* q, int64_t d0, int64_t d1, uint32_t* panel) {
  const __m512i mask = _mm512_set1_epi32(0x000F000F);
  const __m512i magic = _mm512_set1_epi32(0x43004300);
  for (int64_t d = d0; d < d1; ++d) {
    const uint32_t* words = q + d * kTileN;
    uint32_t* out = panel + (d - d0) * 4 * kTileN;
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(words + 16 * j);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m512i shifted = p == 0 ? raw : _mm512_srli_epi32(raw, 4 * p);
        _mm512_store_si512(out + p * kTileN + 16 * j,
                           _mm512_ternarylogic_epi32(shifted, mask, magic, 0xEA));  // (a&b)|c
      }
    }
  }
}

// Words [d0, d1) of an 8-bit tile into pairs 2*(d - d0) + h: codes of rows (4d+2h, 4d+2h+1).
QLINEAR_AVX512 void decode8(const uint32_t* q, int64_t d0, int64_t d1, uint32_t* panel) {
  const __m512i byte = _mm512_set1_epi32(0xFF);
  for (int64_t d = d0; d < d1; ++d) {
    const uint32_t* words = q + d * kTileN;
    uint32_t* out = panel + (d - d0) * 2 * kTileN;
    for (int j = 0; j < 4; ++j) {
      const __m512i raw = _mm512_loadu_si512(words + 16 * j);
      const __m512i f0 = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_and_si512(raw, byte)));
      const __m512i f1 = _mm512_castps_si512(
          _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(raw, 8), byte)));
      const __m512i f2 = _mm512_castps_si512(
          _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(raw, 16), byte)));
      const __m512i f3 = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_srli_epi32(raw, 24)));
      _mm512_store_si512(out + 16 * j, _mm512_or_si512(_mm512_srli_epi32(f0, 16), f1));
      _mm512_store_si512(out + kTileN + 16 * j, _mm512_or_si512(_mm512_srli_epi32(f2, 16), f3));
    }
  }
}

// bf16 bits (low 16 of each lane) of v, rounded to nearest even; NaN stays a quiet NaN (as
// core/dtype.h f32_to_bf16).
QLINEAR_AVX512 inline __m512i bf16_bits(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i top = _mm512_srli_epi32(bits, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(top, _mm512_set1_epi32(1)));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_or_epi32(rounded, nan, top, _mm512_set1_epi32(0x40));
}

inline uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
inline float from_bf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

enum class Pairing { kNibbles4, kNibbles8, kNatural };

// 16 activations (lanes outside m: 0) as f32, exactly.
QLINEAR_AVX512 inline __m512 load_x(const void* src, DType dtype, int64_t k, __mmask16 m) {
  if (dtype == DType::kF32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(src) + k);
  const __m256i half = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(src) + k);
  if (dtype == DType::kF16) return _mm512_cvtph_ps(half);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));  // bf16
}

// Row x[perm] as f32 (act-order; 0 for padding rows).
void gather_row(const void* src, DType dtype, const std::vector<int32_t>& perm, float* out) {
  const auto n = static_cast<int64_t>(perm.size());
  if (dtype == DType::kF32) {
    const auto* x = static_cast<const float*>(src);
    for (int64_t k = 0; k < n; ++k) out[k] = perm[k] < 0 ? 0.0f : x[perm[k]];
  } else if (dtype == DType::kF16) {
    const auto* x = static_cast<const uint16_t*>(src);
    for (int64_t k = 0; k < n; ++k) out[k] = perm[k] < 0 ? 0.0f : f16_to_f32(x[perm[k]]);
  } else {
    const auto* x = static_cast<const uint16_t*>(src);
    for (int64_t k = 0; k < n; ++k) out[k] = perm[k] < 0 ? 0.0f : bf16_to_f32(x[perm[k]]);
  }
}

// One activation row: its bf16 values hb (x rounded to bf16, or for `lo` the bf16 rounding of
// what that missed), their sums per group, and the pairs the kernel broadcasts: pair p goes to
// dst[(p / kChunkPairs) * chunk_stride + p % kChunkPairs] (chunk_stride = kChunkPairs: one run).
QLINEAR_AVX512 void build_row(const TiledWeights& w, const void* src, DType dtype, bool lo,
                              Pairing pairing, uint16_t* hb, uint32_t* dst, int64_t chunk_stride,
                              float* sums) {
  const int64_t K = w.K;
  // Even 16-bit halves of two vectors of 32-bit lanes: the bf16 bits, narrowed in registers (the
  // store form of vpmovdw is slow on Zen 4).
  alignas(64) uint16_t even[32];
  for (int i = 0; i < 32; ++i) even[i] = static_cast<uint16_t>(2 * i);
  const __m512i narrow = _mm512_load_si512(even);
  for (int64_t k = 0; k < K; k += 32) {
    const int64_t left = K - k;
    const auto m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
    const auto m1 = static_cast<__mmask16>(left >= 32  ? 0xFFFFu
                                           : left > 16 ? (1u << (left - 16)) - 1u
                                                       : 0u);
    __m512i h[2];
    for (int i = 0; i < 2; ++i) {
      const __m512 v = load_x(src, dtype, k + 16 * i, i == 0 ? m0 : m1);
      h[i] = bf16_bits(v);
      if (lo) {
        h[i] = bf16_bits(_mm512_sub_ps(v, _mm512_castsi512_ps(_mm512_slli_epi32(h[i], 16))));
      }
    }
    const auto m = static_cast<__mmask32>(m0 | (static_cast<uint32_t>(m1) << 16));
    _mm512_mask_storeu_epi16(hb + k, m, _mm512_permutex2var_epi16(h[0], narrow, h[1]));
  }
  const int64_t group_size = K / w.groups;
  for (int64_t g = 0; g < w.groups; ++g) {
    const uint16_t* at = hb + g * group_size;
    int64_t k = 0;
    __m512d acc0 = _mm512_setzero_pd();
    __m512d acc1 = _mm512_setzero_pd();
    for (; k + 16 <= group_size; k += 16) {
      const __m512i wide =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + k)));
      const __m512 f = _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
      acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
      acc1 = _mm512_add_pd(
          acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
    }
    double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
    for (; k < group_size; ++k) sum += from_bf16(at[k]);
    sums[g] = static_cast<float>(sum);
  }
  // 32 rows = 16 pairs per step, never across a chunk (kChunkPairs is a multiple of 16).
  auto out_at = [&](int64_t k) {
    const int64_t p = k / 2;
    return reinterpret_cast<uint16_t*>(dst + (p / kChunkPairs) * chunk_stride + p % kChunkPairs);
  };
  switch (pairing) {
    case Pairing::kNatural:
      for (int64_t k = 0; k < K; k += 32) {
        const auto m = static_cast<__mmask32>(K - k >= 32 ? ~0u : (1u << (K - k)) - 1u);
        _mm512_mask_storeu_epi16(out_at(k), m, _mm512_maskz_loadu_epi16(m, hb + k));
      }
      break;
    case Pairing::kNibbles4: {
      // Per 8 rows (one word): pair p = (row p, row p + 4).
      alignas(64) uint16_t index[32];
      for (int o = 0; o < 32; ++o) {
        const int t = o % 8;
        index[o] = static_cast<uint16_t>(8 * (o / 8) + t / 2 + 4 * (t % 2));
      }
      const __m512i idx = _mm512_load_si512(index);
      for (int64_t k = 0; k < K; k += 32) {
        // K is whole words (8 rows), so a partial block never pairs across its end.
        const auto m = static_cast<__mmask32>(K - k >= 32 ? ~0u : (1u << (K - k)) - 1u);
        const __m512i v = _mm512_maskz_loadu_epi16(m, hb + k);
        _mm512_mask_storeu_epi16(out_at(k), m, _mm512_permutexvar_epi16(idx, v));
      }
      break;
    }
    case Pairing::kNibbles8:
      // Word d holds rows 4d..4d+3, each as nibbles lo (x1) and hi (x16): slot p pairs nibble p
      // with nibble p + 4, i.e. rows (4d + p/2, 4d + 2 + p/2), x16 for odd p. Small M only, so
      // always one run (rows_avx512).
      for (int64_t d = 0; d < w.steps; ++d) {
        for (int p = 0; p < 4; ++p) {
          const float factor = p % 2 == 0 ? 1.0f : 16.0f;
          const uint16_t low = to_bf16(factor * from_bf16(hb[4 * d + p / 2]));
          const uint16_t high = to_bf16(factor * from_bf16(hb[4 * d + 2 + p / 2]));
          dst[d * 4 + p] = low | (static_cast<uint32_t>(high) << 16);
        }
      }
      break;
  }
}

}  // namespace

QLINEAR_AVX512 void decode_panel(const uint32_t* q, int bits, int64_t k0, int64_t k1,
                                 uint32_t* panel) {
  const int64_t rows_per_word = 32 / bits;
  if (bits == 8) {
    decode8(q, k0 / rows_per_word, k1 / rows_per_word, panel);
  } else {
    decode4(q, k0 / rows_per_word, k1 / rows_per_word, panel);
  }
}

QLINEAR_AVX512 void tile_job_panel_avx512(const TiledWeights& w, const Rows& rows, int64_t tile,
                                          int64_t r0, int64_t r1, float* ytile) {
  alignas(64) uint32_t panel[kChunkPairs * kTileN];
  const uint32_t* q = w.tile_q(tile);
  const bool eight = w.bits == 8;
  Chunk c{};
  c.panel = panel;
  c.group_pairs = w.K / w.groups / 2;
  const TileParams params(w, tile);
  c.params = &params;
  const PanelFn* fns = eight ? kPanelFns<true> : kPanelFns<false>;
  const int64_t rpo = rows.rows_per_out;
  const int64_t o0 = r0 / rpo;
  for (int64_t k0 = 0; k0 < w.K; k0 += kChunkRows) {
    const int64_t k1 = std::min(w.K, k0 + kChunkRows);
    decode_panel(q, w.bits, k0, k1, panel);
    c.p0 = k0 / 2;
    c.p1 = k1 / 2;
    for (int64_t r = r0; r < r1; r += kMaxRows) {
      const int n = static_cast<int>(std::min<int64_t>(kMaxRows, r1 - r));
      const uint32_t* x[kMaxRows];
      const float* sums[kMaxRows];
      float* y[kMaxRows];
      for (int i = 0; i < n; ++i) {
        // Chunk-major rows (see rows_avx512), offset so that x[i][global pair] reads them.
        x[i] = rows.pairs + c.p0 * rows.count + (r + i) * kChunkPairs - c.p0;
        sums[i] = rows.sums + (r + i) * w.groups;
        y[i] = ytile + ((r + i) / rpo - o0) * kTileN;
      }
      fns[n - 1](c, x, sums, y);
    }
  }
}

Avx512RowsShape avx512_rows_shape(const TiledWeights& w, int64_t M, bool split, bool panel) {
  Avx512RowsShape shape;
  shape.rows_per_out = split ? 2 : 1;
  shape.count = M * shape.rows_per_out;
  // 4 bits and natural pairs: K/2 pairs per row; 8-bit nibble pairs (inline 8-bit): 4 per word.
  shape.stride = w.bits == 8 && !panel ? w.K : w.K / 2;
  // The panel engine reads chunk-major pairs [chunk][R][kChunkPairs]: each K chunk of all rows
  // is one contiguous stream (row-major, every job would walk R streams at once).
  const int64_t chunks = (shape.stride + kChunkPairs - 1) / kChunkPairs;
  shape.stored = panel ? chunks * kChunkPairs : shape.stride;
  return shape;
}

Rows build_rows_avx512(const TiledWeights& w, ConstMatrixView x, bool split, bool panel,
                       int threads, uint32_t* pairs, float* sums, uint16_t* hb_slots,
                       float* perm_slots) {
  const Avx512RowsShape shape = avx512_rows_shape(w, x.rows(), split, panel);
  Rows rows;
  rows.rows_per_out = shape.rows_per_out;
  rows.count = shape.count;
  rows.stride = shape.stride;
  rows.pairs = pairs;
  rows.sums = sums;
  const Pairing pairing = w.bits == 4 ? Pairing::kNibbles4
                          : panel     ? Pairing::kNatural
                                      : Pairing::kNibbles8;
  const int64_t K = w.K;
  const DType dtype = x.dtype();
  const bool parallel = threads > 1 && rows.count * K >= (int64_t{1} << 16);
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int64_t slot = omp_get_thread_num();
    uint16_t* hb = hb_slots + slot * K;
    float* permuted = w.perm.empty() ? nullptr : perm_slots + slot * K;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows.count; ++r) {
      const void* src = x.row(r / rows.rows_per_out);
      DType src_dtype = dtype;
      if (permuted != nullptr) {
        gather_row(src, dtype, w.perm, permuted);
        src = permuted;
        src_dtype = DType::kF32;
      }
      // Panel rows are chunk-major: row r's chunk c at (c * R + r) * kChunkPairs.
      uint32_t* dst = pairs + r * (panel ? kChunkPairs : rows.stride);
      build_row(w, src, src_dtype, split && r % 2 == 1, pairing, hb, dst,
                panel ? rows.count * kChunkPairs : kChunkPairs, sums + r * w.groups);
    }
  }
  return rows;
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
