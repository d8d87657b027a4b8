#include "kernels/cpu/fp8_act_quant_avx512.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/common/activation_quant.h"
#include "qlinear/dtype.h"

#if defined(__x86_64__)
// g++ 12 flags the _mm512_undefined_* placeholders inside its own AVX-512 intrinsics as
// (maybe-)uninitialized (GCC bug 105593); the warning says nothing about this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

namespace qlinear::fp8_cpu {

#if defined(__x86_64__)

namespace {

#define QL_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))

// Row elements [k, k + 16) (masked past K) as floats; bf16 and f16 widen exactly.
QL_TARGET_AVX512 inline __m512 load16(const void* row, DType dtype, int64_t k, __mmask16 mask) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kF16: {
      // A 512-bit masked load (avx512bw; the mask covers the low 16 words) keeps avx512vl out.
      const __m256i bits = _mm512_castsi512_si256(
          _mm512_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(row) + k));
      if (dtype == DType::kF16) return _mm512_cvtph_ps(bits);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    }
    default:
      return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(row) + k);
  }
}

inline __mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>((1u << remaining) - 1u);
}

QL_TARGET_AVX512 float absmax(const void* row, DType dtype, int64_t k0, int64_t k1) {
  __m512 m = _mm512_setzero_ps();
  for (int64_t k = k0; k < k1; k += 16) {
    m = _mm512_max_ps(m, _mm512_abs_ps(load16(row, dtype, k, tail_mask(k1 - k))));
  }
  return _mm512_reduce_max_ps(m);
}

// RNE onto the e4m3fn grid of a value already clamped to [-448, 448]: 3 mantissa bits at or
// above 2^-6 (add half an ulp minus one plus the kept lsb, then truncate: the carry may bump the
// exponent, exactly as rounding does), multiples of 2^-9 below it.
QL_TARGET_AVX512 inline __m512 round_e4m3(__m512 c) {
  const __m512i bits = _mm512_castps_si512(c);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 20), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_and_si512(_mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF), lsb)),
                       _mm512_set1_epi32(static_cast<int>(0xFFF00000u)));
  const __m512 sub =
      _mm512_mul_ps(_mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(512.0f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                    _mm512_set1_ps(1.0f / 512.0f));
  const __mmask16 small =
      _mm512_cmp_ps_mask(_mm512_abs_ps(c), _mm512_set1_ps(1.0f / 64.0f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(small, _mm512_castsi512_ps(rounded), sub);
}

// values[k0..k1) = e4m3(clamp(x / s)) (divide) or e4m3(clamp(x * inv)) as bf16.
QL_TARGET_AVX512 void quantize_span(const void* row, DType dtype, int64_t k0, int64_t k1,
                                    bool divide, float s, uint16_t* values) {
  const __m512 scale = _mm512_set1_ps(s);
  const __m512 lo = _mm512_set1_ps(-kF8E4M3Max);
  const __m512 hi = _mm512_set1_ps(kF8E4M3Max);
  for (int64_t k = k0; k < k1; k += 16) {
    const __mmask16 mask = tail_mask(k1 - k);
    const __m512 x = load16(row, dtype, k, mask);
    const __m512 v = divide ? _mm512_div_ps(x, scale) : _mm512_mul_ps(x, scale);
    // max/min return their second operand when one is NaN: NaN stays NaN, as std::clamp does.
    const __m512 q = round_e4m3(_mm512_min_ps(hi, _mm512_max_ps(lo, v)));
    const __m256i bf16 = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(q), 16));
    _mm512_mask_storeu_epi16(values + k, mask, _mm512_castsi256_si512(bf16));
  }
}

// The reference's dynamic scale, with its float operations in its order.
float dynamic_scale(float amax) { return std::max(amax / kF8E4M3Max, kFp8ActScaleFloor); }

}  // namespace

Status quantize_activations_avx512(ConstMatrixView x, const ActQuantRequest& r, uint16_t* values,
                                   float* chunk_scales, int threads) {
  const int64_t M = x.rows();
  const int64_t K = x.cols();
  const int64_t chunks = (K + r.chunk_k - 1) / r.chunk_k;
  const DType dtype = x.dtype();
  threads = static_cast<int>(std::clamp<int64_t>(M, 1, threads));

  float tensor_scale = r.static_scale;
  switch (r.kind) {
    case ActQuant::kNone:
      return make_error(ErrorCode::kInvalidArgument,
                        "W8A8 activation quantization \"none\" quantizes nothing");
    case ActQuant::kStaticTensor:
      if (!(std::isfinite(tensor_scale) && tensor_scale > 0.0f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "static input_scale={} must be finite and > 0 (the checkpoint's "
                          "input_scale)",
                          tensor_scale);
      }
      break;
    case ActQuant::kDynamicTensor: {
      float amax = 0.0f;
#pragma omp parallel for num_threads(threads) reduction(max : amax)
      for (int64_t m = 0; m < M; ++m) amax = std::max(amax, absmax(x.row(m), dtype, 0, K));
      tensor_scale = dynamic_scale(amax);
      break;
    }
    case ActQuant::kDynamicGroup:
      if (r.group_k <= 0 || r.group_k % r.chunk_k != 0) {
        return make_error(ErrorCode::kInternal,
                          "activation group {} is not a positive multiple of the chunk {}",
                          r.group_k, r.chunk_k);
      }
      break;
    case ActQuant::kDynamicToken:
      break;
  }
  const float inv = 1.0f / tensor_scale;

#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    const void* row = x.row(m);
    uint16_t* out = values + m * r.Kp;
    float* scales = chunk_scales + m * chunks;
    switch (r.kind) {
      case ActQuant::kDynamicToken: {
        const float s = dynamic_scale(absmax(row, dtype, 0, K));
        quantize_span(row, dtype, 0, K, /*divide=*/true, s, out);
        std::fill(scales, scales + chunks, s);
        break;
      }
      case ActQuant::kDynamicGroup:
        for (int64_t k0 = 0; k0 < K; k0 += r.group_k) {
          const int64_t k1 = std::min(K, k0 + r.group_k);
          const float s = dynamic_scale(absmax(row, dtype, k0, k1));
          quantize_span(row, dtype, k0, k1, /*divide=*/true, s, out);
          std::fill(scales + k0 / r.chunk_k, scales + (k1 + r.chunk_k - 1) / r.chunk_k, s);
        }
        break;
      default:  // per-tensor, dynamic or static: reciprocal multiply
        quantize_span(row, dtype, 0, K, /*divide=*/false, inv, out);
        std::fill(scales, scales + chunks, tensor_scale);
        break;
    }
    std::fill(out + K, out + r.Kp, uint16_t{0});
  }
  return Status::ok_status();
}

#pragma GCC diagnostic pop

#else  // not x86-64: cpu.fp8.w8a8.avx512 answers kNotCompiled, so this is never called.

Status quantize_activations_avx512(ConstMatrixView, const ActQuantRequest&, uint16_t*, float*,
                                   int) {
  return make_error(ErrorCode::kInternal, "quantize_activations_avx512: not an x86-64 build");
}

#endif

}  // namespace qlinear::fp8_cpu
