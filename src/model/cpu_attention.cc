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

// a[i ..) += sum_j p[j] tile[j][i ..] over kVecs vectors of 16 (the last one `last` masked):
// independent FMA chains, as accumulate_run_avx2 (accumulate_avx512 walks the head as
// accumulate_avx2 does).
template <int kVecs>
QL_AVX512 inline void accumulate_run_avx512(float* a, const float* p, const float* tile, int64_t d,
                                            int64_t i, int64_t n, __mmask16 last) {
  __m512 sum[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    sum[v] = _mm512_maskz_loadu_ps(v + 1 == kVecs ? last : __mmask16{0xFFFF}, a + i + 16 * v);
  }
  for (int64_t j = 0; j < n; ++j) {
    const __m512 pj = _mm512_set1_ps(p[j]);
    const float* row = tile + j * d + i;
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 m = v + 1 == kVecs ? last : __mmask16{0xFFFF};
      sum[v] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m, row + 16 * v), sum[v]);
    }
  }
  for (int v = 0; v < kVecs; ++v) {
    _mm512_mask_storeu_ps(a + i + 16 * v, v + 1 == kVecs ? last : __mmask16{0xFFFF}, sum[v]);
  }
}

QL_AVX512 void accumulate_avx512(float* acc, int64_t heads, int64_t d, const float* p,
                                 const float* tile, int64_t n) {
  const int64_t full = d / 16 * 16;
  constexpr __mmask16 kAll = 0xFFFF;
  for (int64_t g = 0; g < heads; ++g) {
    float* a = acc + g * d;
    const float* pg = p + g * kKeyBlock;
    int64_t i = 0;
    for (; i + 128 <= full; i += 128) accumulate_run_avx512<8>(a, pg, tile, d, i, n, kAll);
    if (i + 64 <= full) {
      accumulate_run_avx512<4>(a, pg, tile, d, i, n, kAll);
      i += 64;
    }
    if (i + 32 <= full) {
      accumulate_run_avx512<2>(a, pg, tile, d, i, n, kAll);
      i += 32;
    }
    if (i < full) accumulate_run_avx512<1>(a, pg, tile, d, i, n, kAll);
    if (full < d) accumulate_run_avx512<1>(a, pg, tile, d, full, n, tail_mask(d - full));
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

// s[u] = (q . key row u) * scale for kKeys (1 or 4) consecutive rows of the tile, each q vector
// loaded once for the keys. Two FMA chains per dot (head sizes are 64-256: one chain would wait on
// the FMA latency): a0 takes the even 8-vectors and a last odd one, a1 the odd ones and the masked
// tail. The eight lanes are then added by one tree, ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
// l7)), for four keys at once, so a score has the same bits whichever form scored it.
template <int kKeys>
QL_AVX2 inline void score_keys_avx2(const float* qg, const float* k, int64_t d, int64_t full,
                                    __m256i tail, float scale, float* s) {
  static_assert(kKeys == 1 || kKeys == 4);
  __m256 a0[kKeys];
  __m256 a1[kKeys];
  for (int u = 0; u < kKeys; ++u) a0[u] = a1[u] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= full; i += 16) {
    const __m256 q0 = _mm256_loadu_ps(qg + i);
    const __m256 q1 = _mm256_loadu_ps(qg + i + 8);
    for (int u = 0; u < kKeys; ++u) {
      a0[u] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k + u * d + i), a0[u]);
      a1[u] = _mm256_fmadd_ps(q1, _mm256_loadu_ps(k + u * d + i + 8), a1[u]);
    }
  }
  if (i < full) {
    const __m256 q0 = _mm256_loadu_ps(qg + i);
    for (int u = 0; u < kKeys; ++u) {
      a0[u] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k + u * d + i), a0[u]);
    }
  }
  if (full < d) {
    const __m256 qt = _mm256_maskload_ps(qg + full, tail);
    for (int u = 0; u < kKeys; ++u) {
      a1[u] = _mm256_fmadd_ps(qt, _mm256_maskload_ps(k + u * d + full, tail), a1[u]);
    }
  }
  __m256 v[4];
  for (int u = 0; u < 4; ++u) v[u] = _mm256_add_ps(a0[u % kKeys], a1[u % kKeys]);
  // [l0+l4, l1+l5, l2+l6, l3+l7] of keys 0 and 1 (and 2, 3) side by side.
  const __m256 w01 = _mm256_add_ps(_mm256_permute2f128_ps(v[0], v[1], 0x20),
                                   _mm256_permute2f128_ps(v[0], v[1], 0x31));
  const __m256 w23 = _mm256_add_ps(_mm256_permute2f128_ps(v[2], v[3], 0x20),
                                   _mm256_permute2f128_ps(v[2], v[3], 0x31));
  // [(l0+l4)+(l2+l6), (l1+l5)+(l3+l7)] of keys 0, 2 | 1, 3.
  const __m256 x = _mm256_add_ps(_mm256_shuffle_ps(w01, w23, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm256_shuffle_ps(w01, w23, _MM_SHUFFLE(3, 2, 3, 2)));
  // Keys 0, 2, 0, 2 | 1, 3, 1, 3.
  const __m256 dots = _mm256_add_ps(_mm256_shuffle_ps(x, x, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm256_shuffle_ps(x, x, _MM_SHUFFLE(3, 1, 3, 1)));
  alignas(32) float out[8];
  _mm256_store_ps(out, _mm256_mul_ps(dots, _mm256_set1_ps(scale)));
  constexpr int kLane[4] = {0, 4, 1, 5};
  for (int u = 0; u < kKeys; ++u) s[u] = out[kLane[u]];
}

QL_AVX2 void score_avx2(const float* q, int64_t heads, int64_t d, const float* tile, int64_t n,
                        float scale, float* s) {
  const int64_t full = d / 8 * 8;
  const __m256i tail = lanes_below(d - full);
  for (int64_t g = 0; g < heads; ++g) {
    const float* qg = q + g * d;
    float* sg = s + g * kKeyBlock;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) score_keys_avx2<4>(qg, tile + j * d, d, full, tail, scale, sg + j);
    for (; j < n; ++j) score_keys_avx2<1>(qg, tile + j * d, d, full, tail, scale, sg + j);
  }
}

// a[i .. i + 8 kVecs) += sum_j p[j] tile[j][i ..]: kVecs independent FMA chains (one chain per
// vector over the keys waited on the FMA latency at every key), each lane's sum in key order.
template <int kVecs>
QL_AVX2 inline void accumulate_run_avx2(float* a, const float* p, const float* tile, int64_t d,
                                        int64_t i, int64_t n) {
  __m256 sum[kVecs];
  for (int v = 0; v < kVecs; ++v) sum[v] = _mm256_loadu_ps(a + i + 8 * v);
  for (int64_t j = 0; j < n; ++j) {
    const __m256 pj = _mm256_set1_ps(p[j]);
    const float* row = tile + j * d + i;
    for (int v = 0; v < kVecs; ++v) {
      sum[v] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 8 * v), sum[v]);
    }
  }
  for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(a + i + 8 * v, sum[v]);
}

QL_AVX2 void accumulate_avx2(float* acc, int64_t heads, int64_t d, const float* p,
                             const float* tile, int64_t n) {
  const int64_t full = d / 8 * 8;
  const __m256i tail = lanes_below(d - full);
  for (int64_t g = 0; g < heads; ++g) {
    float* a = acc + g * d;
    const float* pg = p + g * kKeyBlock;
    int64_t i = 0;
    for (; i + 64 <= full; i += 64) accumulate_run_avx2<8>(a, pg, tile, d, i, n);
    if (i + 32 <= full) {
      accumulate_run_avx2<4>(a, pg, tile, d, i, n);
      i += 32;
    }
    if (i + 16 <= full) {
      accumulate_run_avx2<2>(a, pg, tile, d, i, n);
      i += 16;
    }
    if (i < full) accumulate_run_avx2<1>(a, pg, tile, d, i, n);
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

// Key blocks whose rows are requested ahead of their widening. A head's rows lie a cache row
// apart (1 KiB for Llama-3.2-1B's 8 heads of 64 in bf16), a stride the hardware prefetchers follow
// late: the widening waited on DRAM (half of a long-context decode's attention time). Zen 3 VM,
// synth-1b, attention-only decode step at 1024-1088 positions (QLINEAR_STEP_SKIP), 5 alternated
// rounds: median 10.2 ms against 13.4 without; 4 blocks ahead into L2 only 11.1.
constexpr int64_t kPrefetchBlocks = 2;

// Requests every cache line of the key and value rows [p0, p1) of a KV head.
void prefetch_rows(const KvHead& kv, int64_t p0, int64_t p1, int64_t d) {
  const int64_t bytes = d * static_cast<int64_t>(dtype_size(kv.dtype));
  for (int64_t p = p0; p < p1; ++p) {
    const char* k = reinterpret_cast<const char*>(row_of(kv.k, kv.k_stride, p));
    const char* v = reinterpret_cast<const char*>(row_of(kv.v, kv.v_stride, p));
    for (int64_t b = 0; b < bytes; b += 64) {
      __builtin_prefetch(k + b, 0, 3);
      __builtin_prefetch(v + b, 0, 3);
    }
  }
}

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
      const int64_t ahead = j0 + kPrefetchBlocks * kKeyBlock;
      if (j0 == first) prefetch_rows(kv, j0 + kKeyBlock, std::min(last + 1, ahead), d);
      prefetch_rows(kv, ahead, std::min(last + 1, ahead + kKeyBlock), d);
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
