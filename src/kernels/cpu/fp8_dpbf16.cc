#include "kernels/cpu/fp8_dpbf16.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

#include "qlinear/dtype.h"

#if defined(__x86_64__)
// g++ 12 flags the _mm512_undefined_* placeholders inside its own AVX-512 intrinsics as
// maybe-uninitialized (GCC bug 105593); the warning says nothing about this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace qlinear::fp8_cpu {

#if defined(__x86_64__)

namespace {

// bf16 bits of (e4m3fn magnitude code c) * 2^-8, split into high and low bytes: the tables of
// the vbmi decoder (the 2^-8 matches the shift decoder, so both share the panels' scales).
struct ByteTables {
  alignas(64) std::array<uint8_t, 128> high{};
  alignas(64) std::array<uint8_t, 128> low{};
  ByteTables() {
    for (int c = 0; c < 128; ++c) {
      const uint16_t bits = f32_to_bf16(f8e4m3_to_f32(static_cast<uint8_t>(c)) / 256.0f);
      high[c] = static_cast<uint8_t>(bits >> 8);
      low[c] = static_cast<uint8_t>(bits & 0xFF);
    }
  }
};
const ByteTables kByteTables;

}  // namespace

// --- shift decoder: avx512f/bw/bf16 only ---------------------------------------------------
// Each decoder is a region compiled for its instruction set (GCC's target pragma; clang, which
// ignores it, applies the same target attribute to every function in the region).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512bf16"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16")
#endif
namespace shift {
namespace {

// 32 codes -> the f16 pattern ((int8)c << 7) & 0xBF80 (fp8_cpu_common.h) -> f32 -> bf16.
inline __m512bh decode32(const uint8_t* codes) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
  __m512i h = _mm512_cvtepi8_epi16(raw);
  h = _mm512_and_si512(_mm512_slli_epi16(h, 7), _mm512_set1_epi16(static_cast<int16_t>(0xBF80)));
  const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
  return _mm512_cvtne2ps_pbh(hi, lo);
}

struct Decoder {
  void step(const uint8_t* codes, __m512bh* pair0, __m512bh* pair1) const {
    *pair0 = decode32(codes);
    *pair1 = decode32(codes + 32);
  }
};

#include "kernels/cpu/fp8_dpbf16_body.h"

}  // namespace

void run(const Fp8Panels& w, const Bf16Activations& x, MatrixView y, int threads, float* yt) {
  run_groups(w, x, y, threads, yt);
}

}  // namespace shift
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// --- vbmi decoder: byte-table lookups ------------------------------------------------------
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512bf16,avx512vbmi"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16,avx512vbmi")
#endif
namespace vbmi {
namespace {

// 64 codes of two k pairs (kPairsVbmi order) -> vpermi2b looks up the high and low bf16 bytes
// of each magnitude (the sign bit is ignored as an index bit), the sign is ORed into the high
// byte, and the byte unpacks interleave low/high into the two pairs' bf16 lanes in order.
struct Decoder {
  __m512i high0, high1, low0, low1, sign;
  Decoder()
      : high0(_mm512_load_si512(kByteTables.high.data())),
        high1(_mm512_load_si512(kByteTables.high.data() + 64)),
        low0(_mm512_load_si512(kByteTables.low.data())),
        low1(_mm512_load_si512(kByteTables.low.data() + 64)),
        sign(_mm512_set1_epi8(static_cast<char>(0x80))) {}
  void step(const uint8_t* codes, __m512bh* pair0, __m512bh* pair1) const {
    const __m512i c = _mm512_loadu_si512(codes);
    __m512i h = _mm512_permutex2var_epi8(high0, c, high1);
    const __m512i l = _mm512_permutex2var_epi8(low0, c, low1);
    h = _mm512_ternarylogic_epi32(h, c, sign, 0xF8);  // h | (c & 0x80)
    *pair0 = (__m512bh)_mm512_unpacklo_epi8(l, h);
    *pair1 = (__m512bh)_mm512_unpackhi_epi8(l, h);
  }
};

#include "kernels/cpu/fp8_dpbf16_body.h"

}  // namespace

void run(const Fp8Panels& w, const Bf16Activations& x, MatrixView y, int threads, float* yt) {
  run_groups(w, x, y, threads, yt);
}

}  // namespace vbmi
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

PanelLayout dpbf16_layout() {
  return __builtin_cpu_supports("avx512vbmi") ? PanelLayout::kPairsVbmi : PanelLayout::kPairs;
}

void run_dpbf16(const Fp8Panels& w, const Bf16Activations& x, MatrixView y, int threads,
                float* yt_slots) {
  if (w.layout == PanelLayout::kPairsVbmi) {
    vbmi::run(w, x, y, threads, yt_slots);
  } else {
    shift::run(w, x, y, threads, yt_slots);
  }
}

#pragma GCC diagnostic pop

#else  // not x86-64: the kernels' check() answers kNotCompiled, so these are never called.

PanelLayout dpbf16_layout() { return PanelLayout::kPairs; }
void run_dpbf16(const Fp8Panels&, const Bf16Activations&, MatrixView, int, float*) {}

#endif

}  // namespace qlinear::fp8_cpu
