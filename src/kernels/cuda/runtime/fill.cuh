// Fills device memory with a 32-bit pattern (tests poison outputs with NaN bits; the runner zeroes
// caches), one launch on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace qlinear::cuda_runtime {

// Writes `pattern` to the `bytes / 4` aligned words at dst (bytes % 4 == 0, dst 4-byte aligned).
cudaError_t fill_words(void* dst, uint32_t pattern, std::size_t bytes, cudaStream_t stream);

}  // namespace qlinear::cuda_runtime
