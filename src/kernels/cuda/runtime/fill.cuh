// Small runtime kernels: filling device memory with a 32-bit pattern (tests poison outputs with NaN
// bits; the runner zeroes caches), and a spin kernel that holds a stream for a while (the bench
// queues its timed calls behind it, so the host's launch overhead stays out of the timings).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace qlinear::cuda_runtime {

// Writes `pattern` to the `bytes / 4` aligned words at dst (bytes % 4 == 0, dst 4-byte aligned).
cudaError_t fill_words(void* dst, uint32_t pattern, std::size_t bytes, cudaStream_t stream);

// One thread that returns after `nanoseconds` of the GPU's global timer.
cudaError_t spin(uint64_t nanoseconds, cudaStream_t stream);

}  // namespace qlinear::cuda_runtime
