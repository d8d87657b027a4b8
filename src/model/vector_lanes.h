// Tail masks of the CPU decoder's vector forms (cpu_attention.cc, cpu_ops.cc): the lanes of a
// 16- or 8-wide step that lie below the end of a row, for masked loads and stores.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace qlinear::vector_lanes {

// Lanes [0, min(left, 16)) of an AVX-512 step.
__attribute__((target("avx512f"))) inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// Lanes [0, min(left, 8)) of an AVX2 step, for maskload / maskstore.
__attribute__((target("avx2"))) inline __m256i lanes_below(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(left, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace qlinear::vector_lanes

#endif  // __x86_64__
