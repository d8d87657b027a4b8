// GPTQ word packing for tests, written from the format (docs/reference/formats.md: code i of a
// word at bit offset bits*i, K-major words [K*bits/32, N]) independently of src/convert/.
#pragma once

#include <cstdint>
#include <vector>

namespace qlinear::test {

// codes [K, N] (each < 2^bits) -> words [K / (32/bits), N].
inline std::vector<uint32_t> pack_gptq(const std::vector<uint32_t>& codes, int64_t K, int64_t N,
                                       int bits) {
  const int64_t per_word = 32 / bits;
  std::vector<uint32_t> words(static_cast<size_t>(K / per_word * N), 0);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < N; ++n) {
      words[(k / per_word) * N + n] |= codes[k * N + n] << (bits * (k % per_word));
    }
  }
  return words;
}

}  // namespace qlinear::test
