#include "kernels/cuda/runtime/fill.cuh"

namespace qlinear::cuda_runtime {
namespace {

__global__ void fill_kernel(uint32_t* dst, uint32_t pattern, std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    dst[i] = pattern;
  }
}

__device__ uint64_t global_timer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t nanoseconds) {
  const uint64_t start = global_timer();
  while (global_timer() - start < nanoseconds) {
  }
}

}  // namespace

cudaError_t fill_words(void* dst, uint32_t pattern, std::size_t bytes, cudaStream_t stream) {
  const std::size_t words = bytes / 4;
  if (words == 0) return cudaSuccess;
  constexpr unsigned kThreads = 256;
  const std::size_t blocks = (words + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<uint32_t*>(dst), pattern, words);
  return cudaGetLastError();
}

cudaError_t spin(uint64_t nanoseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

}  // namespace qlinear::cuda_runtime
