// cpu_attention.h: per block of keys, the rows are widened to an f32 tile once, every query head
// of the KV head is scored against the tile, the online softmax moves, and the value tile is added
// into every head's accumulator. The four tile steps have a portable form, an AVX2 form and an
// AVX-512 form (intrinsics in functions with a target attribute: the library is built for
// baseline x86-64).
#include "model/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "model/kv_fp8.h"
#include "model/vector_exp.h"
#include "model/vector_lanes.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define QL_ATTENTION_X86 1
#endif

namespace qlinear::cpu_attention {
namespace {

constexpr int64_t kKeyBlock = 32;  // keys scored together before the running max moves
constexpr int64_t kHeadChunk = 8;  // query heads of one KV head kept in flight together

const std::byte* row_of(const std::byte* base, int64_t stride, int64_t p) {
  return base + p * stride;
}

// Rows p0 .. p0 + n - 1 of keys (or values) as f32 into tile [n][d].
void widen_portable(const std::byte* base, int64_t stride, DType dtype, const float* scales,
                    int64_t scale_stride, int64_t p0, int64_t n, int64_t d, float* tile) {
  for (int64_t j = 0; j < n; ++j) {
    const std::byte* row = row_of(base, stride, p0 + j);
    if (dtype == DType::kF8E4M3) {
      kv_fp8::dequantize_head(reinterpret_cast<const uint8_t*>(row), d,
                              scales[(p0 + j) * scale_stride], tile + j * d);
    } else {
      convert_to_f32(row, dtype, static_cast<std::size_t>(d), tile + j * d);
    }
  }
}

// s[g * kKeyBlock + j] = (q_g . tile_j) * scale, the dot in 8 interleaved partial sums.
void score_portable(const float* q, int64_t heads, int64_t d, const float* tile, int64_t n,
                    float scale, float* s) {
  for (int64_t g = 0; g < heads; ++g) {
    const float* qg = q + g * d;
    for (int64_t j = 0; j < n; ++j) {
      const float* k = tile + j * d;
      float part[8] = {};
      int64_t i = 0;
      for (; i + 8 <= d; i += 8) {
        for (int l = 0; l < 8; ++l) part[l] += qg[i + l] * k[i + l];
      }
      float dot =
          ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
      for (; i < d; ++i) dot += qg[i] * k[i];
      s[g * kKeyBlock + j] = dot * scale;
    }
  }
}

// acc_g += sum_j p[g * kKeyBlock + j] * tile_j, in key order.
void accumulate_portable(float* acc, int64_t heads, int64_t d, const float* p, const float* tile,
                         int64_t n) {
  for (int64_t g = 0; g < heads; ++g) {
    float* a = acc + g * d;
    for (int64_t j = 0; j < n; ++j) {
      const float w = p[g * kKeyBlock + j];
      const float* v = tile + j * d;
      for (int64_t i = 0; i < d; ++i) a[i] += w * v[i];
    }
  }
}

// s[j] = exp(s[j] - sub) for j < n.
void exp_shifted_portable(float* s, int64_t n, float sub) {
  for (int64_t j = 0; j < n; ++j) s[j] = std::exp(s[j] - sub);
}

// The four tile steps of one form, picked once per call.
struct TileSteps {
  void (*widen)(const std::byte*, int64_t, DType, const float*, int64_t, int64_t, int64_t, int64_t,
                float*);
  void (*score)(const float*, int64_t, int64_t, const float*, int64_t, float, float*);
  void (*accumulate)(float*, int64_t, int64_t, const float*, const float*, int64_t);
  void (*exp_shifted)(float*, int64_t, float);
};
constexpr TileSteps kPortable{widen_portable, score_portable, accumulate_portable,
                              exp_shifted_portable};

#if QL_ATTENTION_X86
using vector_lanes::lanes_below;
using vector_lanes::tail_mask;

#define QL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

QL_AVX512 void widen_avx512(const std::byte* base, int64_t stride, DType dtype, const float* scales,
                            int64_t scale_stride, int64_t p0, int64_t n, int64_t d, float* tile) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    widen_portable(base, stride, dtype, scales, scale_stride, p0, n, d, tile);
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const auto* row = reinterpret_cast<const uint16_t*>(row_of(base, stride, p0 + j));
    float* out = tile + j * d;
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      const __m256i h = _mm256_maskz_loadu_epi16(m, row + i);
      __m512 f;
      if (dtype == DType::kBF16) {
        f = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      } else {
        f = _mm512_cvtph_ps(h);
      }
      _mm512_mask_storeu_ps(out + i, m, f);
    }
  }
}

QL_AVX512 void score_avx512(const float* q, int64_t heads, int64_t d, const float* tile, int64_t n,
                            float scale, float* s) {
  for (int64_t g = 0; g < heads; ++g) {
    const float* qg = q + g * d;
    for (int64_t j = 0; j < n; ++j) {
      const float* k = tile + j * d;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < d; i += 16) {
        const __mmask16 m = tail_mask(d - i);
        acc =
            _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qg + i), _mm512_maskz_loadu_ps(m, k + i), acc);
      }
      s[g * kKeyBlock + j] = _mm512_reduce_add_ps(acc) * scale;
    }
  }
}

QL_AVX512 void accumulate_avx512(float* acc, int64_t heads, int64_t d, const float* p,
                                 const float* tile, int64_t n) {
  for (int64_t g = 0; g < heads; ++g) {
    float* a = acc + g * d;
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = tail_mask(d - i);
      __m512 sum = _mm512_maskz_loadu_ps(m, a + i);
      for (int64_t j = 0; j < n; ++j) {
        sum = _mm512_fmadd_ps(_mm512_set1_ps(p[g * kKeyBlock + j]),
                              _mm512_maskz_loadu_ps(m, tile + j * d + i), sum);
      }
      _mm512_mask_storeu_ps(a + i, m, sum);
    }
  }
}
// s[j] = exp(s[j] - sub) for j < n.
QL_AVX512 void exp_shifted_avx512(float* s, int64_t n, float sub) {
  const __m512 shift = _mm512_set1_ps(sub);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), shift);
    _mm512_mask_storeu_ps(s + j, m, Sleef_expf16_u10avx512f(v));
  }
}
#undef QL_AVX512
constexpr TileSteps kAvx512{widen_avx512, score_avx512, accumulate_avx512, exp_shifted_avx512};

#define QL_AVX2 __attribute__((target("avx2,fma,f16c")))

QL_AVX2 inline float reduce_add8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

QL_AVX2 void widen_avx2(const std::byte* base, int64_t stride, DType dtype, const float* scales,
                        int64_t scale_stride, int64_t p0, int64_t n, int64_t d, float* tile) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    widen_portable(base, stride, dtype, scales, scale_stride, p0, n, d, tile);
    return;
  }
  const int64_t full = d / 8 * 8;
  for (int64_t j = 0; j < n; ++j) {
    const auto* row = reinterpret_cast<const uint16_t*>(row_of(base, stride, p0 + j));
    float* out = tile + j * d;
    for (int64_t i = 0; i < full; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i));
      const __m256 f = dtype == DType::kBF16
                           ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                           : _mm256_cvtph_ps(h);
      _mm256_storeu_ps(out + i, f);
    }
    if (full < d) {
      convert_to_f32(row + full, dtype, static_cast<std::size_t>(d - full), out + full);
    }
  }
}

// Two chains per dot (head sizes are 64-256: one chain would wait on the FMA latency).
QL_AVX2 void score_avx2(const float* q, int64_t heads, int64_t d, const float* tile, int64_t n,
                        float scale, float* s) {
  const int64_t full = d / 8 * 8;
  const __m256i tail = lanes_below(d - full);
  for (int64_t g = 0; g < heads; ++g) {
    const float* qg = q + g * d;
    for (int64_t j = 0; j < n; ++j) {
      const float* k = tile + j * d;
      __m256 acc0 = _mm256_setzero_ps();
      __m256 acc1 = _mm256_setzero_ps();
      int64_t i = 0;
      for (; i + 16 <= full; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + i), _mm256_loadu_ps(k + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + i + 8), _mm256_loadu_ps(k + i + 8), acc1);
      }
      if (i < full) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + i), _mm256_loadu_ps(k + i), acc0);
      if (full < d) {
        acc1 = _mm256_fmadd_ps(_mm256_maskload_ps(qg + full, tail),
                               _mm256_maskload_ps(k + full, tail), acc1);
      }
      s[g * kKeyBlock + j] = reduce_add8(_mm256_add_ps(acc0, acc1)) * scale;
    }
  }
}

QL_AVX2 void accumulate_avx2(float* acc, int64_t heads, int64_t d, const float* p,
                             const float* tile, int64_t n) {
  const int64_t full = d / 8 * 8;
  const __m256i tail = lanes_below(d - full);
  for (int64_t g = 0; g < heads; ++g) {
    float* a = acc + g * d;
    const float* pg = p + g * kKeyBlock;
    for (int64_t i = 0; i < full; i += 8) {
      __m256 sum = _mm256_loadu_ps(a + i);
      for (int64_t j = 0; j < n; ++j) {
        sum = _mm256_fmadd_ps(_mm256_set1_ps(pg[j]), _mm256_loadu_ps(tile + j * d + i), sum);
      }
      _mm256_storeu_ps(a + i, sum);
    }
    if (full < d) {
      __m256 sum = _mm256_maskload_ps(a + full, tail);
      for (int64_t j = 0; j < n; ++j) {
        sum = _mm256_fmadd_ps(_mm256_set1_ps(pg[j]), _mm256_maskload_ps(tile + j * d + full, tail),
                              sum);
      }
      _mm256_maskstore_ps(a + full, tail, sum);
    }
  }
}

// s[j] = exp(s[j] - sub) for j < n, every element through SLEEF's vector exp (the tail too, so
// a score's weight does not depend on where its block ends).
QL_AVX2 void exp_shifted_avx2(float* s, int64_t n, float sub) {
  const __m256 shift = _mm256_set1_ps(sub);
  for (int64_t j = 0; j < n; j += 8) {
    const __m256i m = lanes_below(n - j);
    const __m256 v = _mm256_sub_ps(_mm256_maskload_ps(s + j, m), shift);
    _mm256_maskstore_ps(s + j, m, Sleef_expf8_u10avx2(v));
  }
}
#undef QL_AVX2
constexpr TileSteps kAvx2{widen_avx2, score_avx2, accumulate_avx2, exp_shifted_avx2};
#endif

}  // namespace

void attend(const float* q, int64_t heads, int64_t d, const KvHead& kv, int64_t first, int64_t last,
            float scale, float* out, VectorForm form) {
#if QL_ATTENTION_X86
  const TileSteps& step = form == VectorForm::kAvx512 ? kAvx512
                          : form == VectorForm::kAvx2 ? kAvx2
                                                      : kPortable;
#else
  (void)form;
  const TileSteps& step = kPortable;
#endif
  alignas(64) float tile[kKeyBlock * kMaxHeadDim];
  alignas(64) float acc[kHeadChunk * kMaxHeadDim];
  float s[kHeadChunk * kKeyBlock];
  for (int64_t h0 = 0; h0 < heads; h0 += kHeadChunk) {
    const int64_t hn = std::min(kHeadChunk, heads - h0);
    const float* qc = q + h0 * d;
    std::fill(acc, acc + hn * d, 0.0f);
    float running_max[kHeadChunk];
    float running_sum[kHeadChunk];
    std::fill(running_max, running_max + hn, -std::numeric_limits<float>::infinity());
    std::fill(running_sum, running_sum + hn, 0.0f);
    for (int64_t j0 = first; j0 <= last; j0 += kKeyBlock) {
      const int64_t n = std::min(last + 1, j0 + kKeyBlock) - j0;
      step.widen(kv.k, kv.k_stride, kv.dtype, kv.k_scale, kv.scale_stride, j0, n, d, tile);
      step.score(qc, hn, d, tile, n, scale, s);
      for (int64_t g = 0; g < hn; ++g) {
        float* sg = s + g * kKeyBlock;
        float block_max = running_max[g];
        for (int64_t j = 0; j < n; ++j) block_max = std::max(block_max, sg[j]);
        const float correction = std::exp(running_max[g] - block_max);
        running_sum[g] *= correction;
        float* a = acc + g * d;
        for (int64_t i = 0; i < d; ++i) a[i] *= correction;
        running_max[g] = block_max;
        step.exp_shifted(sg, n, block_max);  // each score becomes its weight, exp(score - max)
        for (int64_t j = 0; j < n; ++j) running_sum[g] += sg[j];
      }
      step.widen(kv.v, kv.v_stride, kv.dtype, kv.v_scale, kv.scale_stride, j0, n, d, tile);
      step.accumulate(acc, hn, d, s, tile, n);
    }
    for (int64_t g = 0; g < hn; ++g) {
      const float inv = 1.0f / running_sum[g];
      for (int64_t i = 0; i < d; ++i) out[(h0 + g) * d + i] = acc[g * d + i] * inv;
    }
  }
}

}  // namespace qlinear::cpu_attention
