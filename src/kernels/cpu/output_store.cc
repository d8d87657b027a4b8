#include "kernels/cpu/output_store.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu_features.h"

namespace qlinear {
namespace {

using StoreFn = void (*)(const float*, const float*, int64_t, DType, void*);

void store_scalar(const float* src, const float* bias, int64_t count, DType dtype, void* dst) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = bias == nullptr ? src[i] : src[i] + bias[i];
    switch (dtype) {
      case DType::kF32:
        static_cast<float*>(dst)[i] = v;
        break;
      case DType::kBF16:
        static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v);
        break;
      default:
        static_cast<uint16_t*>(dst)[i] = f32_to_f16(v);
        break;
    }
  }
}

#if defined(__x86_64__)

#define QL_STORE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define QL_STORE_AVX2 __attribute__((target("avx2,f16c")))

// f32_to_bf16 in 16 lanes: add 0x7FFF + lsb and keep the high half; NaN lanes keep their high
// half with the quiet bit set.
QL_STORE_AVX512 inline __m256i bf16_rne(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

QL_STORE_AVX512 void store_avx512(const float* src, const float* bias, int64_t count, DType dtype,
                                  void* dst) {
  for (int64_t i = 0; i < count; i += 16) {
    const int64_t left = count - i;
    const auto m = static_cast<__mmask16>(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + i));
    switch (dtype) {
      case DType::kF32:
        _mm512_mask_storeu_ps(static_cast<float*>(dst) + i, m, v);
        break;
      case DType::kBF16:
        _mm256_mask_storeu_epi16(static_cast<uint16_t*>(dst) + i, m, bf16_rne(v));
        break;
      default:
        _mm256_mask_storeu_epi16(static_cast<uint16_t*>(dst) + i, m,
                                 _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    }
  }
}

QL_STORE_AVX2 void store_avx2(const float* src, const float* bias, int64_t count, DType dtype,
                              void* dst) {
  int64_t i = 0;
  if (dtype == DType::kF16) {
    for (; i + 8 <= count; i += 8) {
      __m256 v = _mm256_loadu_ps(src + i);
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(dst) + i),
                       _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  } else if (dtype == DType::kF32) {
    for (; i + 8 <= count; i += 8) {
      __m256 v = _mm256_loadu_ps(src + i);
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
      _mm256_storeu_ps(static_cast<float*>(dst) + i, v);
    }
  }
  // bf16 and the tail: the scalar rule.
  const std::size_t elem = dtype == DType::kF32 ? 4 : 2;
  store_scalar(src + i, bias == nullptr ? nullptr : bias + i, count - i, dtype,
               static_cast<char*>(dst) + i * elem);
}

#endif

StoreFn pick() {
#if defined(__x86_64__)
  const CpuFeatures cpu = detect_cpu_features();
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl) return store_avx512;
  if (cpu.avx2 && cpu.f16c) return store_avx2;
#endif
  return store_scalar;
}

}  // namespace

void store_output(const float* src, const float* bias, int64_t count, DType dtype, void* dst) {
  static const StoreFn fn = pick();
  fn(src, bias, count, dtype, dst);
}

}  // namespace qlinear
