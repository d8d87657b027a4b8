// Elementwise kernels the CUDA kernels share: the f32 -> y epilogue, dtype conversion, and the
// dequantization of canonical int / FP8 weights (the blas family's prepare).
#include <cuda_fp8.h>

#include <atomic>
#include <cstdlib>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

using cuda_device::load_element;
using cuda_device::store_element;

#define QL_GRID_STRIDE(i, total)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void epilogue_kernel(const float* src, int64_t M, int64_t N, const float* bias, void* y,
                                int64_t ldy, int out_code) {
  QL_GRID_STRIDE(i, M * N) {
    const int64_t m = i / N;
    const int64_t n = i - m * N;
    float v = src[i];
    if (bias != nullptr) v += bias[n];
    store_element(y, m * ldy + n, v, out_code);
  }
}

__global__ void bias_add_kernel(float* y, int64_t M, int64_t N, int64_t ldy, const float* bias) {
  QL_GRID_STRIDE(i, M * N) {
    const int64_t m = i / N;
    const int64_t n = i - m * N;
    y[m * ldy + n] += bias[n];
  }
}

__global__ void convert_kernel(const void* in, int in_code, int64_t count, void* out,
                               int out_code) {
  QL_GRID_STRIDE(i, count) { store_element(out, i, load_element(in, i, in_code), out_code); }
}

__global__ void dequant_int_kernel(const uint32_t* qweight, const float* scales,
                                   const uint8_t* zeros, const int32_t* g_idx, int bits, int64_t K,
                                   int64_t N, int group_size, void* out, int out_code) {
  const int pf = 32 / bits;
  const uint32_t mask = (1u << bits) - 1u;
  QL_GRID_STRIDE(i, K * N) {
    const int64_t n = i / K;
    const int64_t k = i - n * K;
    const uint32_t word = qweight[(k / pf) * N + n];
    const int code = static_cast<int>((word >> (bits * (k % pf))) & mask);
    const int64_t g = g_idx != nullptr ? g_idx[k] : k / group_size;
    const int zero = zeros != nullptr ? zeros[g * N + n] : (1 << (bits - 1));
    store_element(out, i, static_cast<float>(code - zero) * scales[g * N + n], out_code);
  }
}

__global__ void dequant_fp8_kernel(const uint8_t* q, const float* scale, int64_t K, int64_t N,
                                   int block_n, int block_k, void* out, int out_code) {
  const int64_t k_blocks = block_k > 0 ? (K + block_k - 1) / block_k : 0;
  QL_GRID_STRIDE(i, K * N) {
    const int64_t n = i / K;
    const int64_t k = i - n * K;
    const float s = block_k > 0 ? scale[(n / block_n) * k_blocks + k / block_k] : scale[n];
    const __half_raw h = __nv_cvt_fp8_to_halfraw(q[i], __NV_E4M3);
    store_element(out, i, __half2float(__half(h)) * s, out_code);
  }
}

}  // namespace

cudaError_t epilogue(const float* src, int64_t M, int64_t N, const float* bias, void* y,
                     int64_t ldy, int out_code, cudaStream_t stream) {
  if (M * N == 0) return cudaSuccess;
  epilogue_kernel<<<cuda_device::grid_for(M * N, 8192), 256, 0, stream>>>(src, M, N, bias, y, ldy,
                                                                          out_code);
  return cudaGetLastError();
}

cudaError_t bias_add_f32(float* y, int64_t M, int64_t N, int64_t ldy, const float* bias,
                         cudaStream_t stream) {
  if (M * N == 0) return cudaSuccess;
  bias_add_kernel<<<cuda_device::grid_for(M * N, 8192), 256, 0, stream>>>(y, M, N, ldy, bias);
  return cudaGetLastError();
}

cudaError_t convert(const void* in, int in_code, int64_t count, void* out, int out_code,
                    cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  convert_kernel<<<cuda_device::grid_for(count), 256, 0, stream>>>(in, in_code, count, out,
                                                                   out_code);
  return cudaGetLastError();
}

cudaError_t dequant_int(const uint32_t* qweight, const float* scales, const uint8_t* zeros,
                        const int32_t* g_idx, int bits, int64_t K, int64_t N, int group_size,
                        void* out, int out_code, cudaStream_t stream) {
  dequant_int_kernel<<<cuda_device::grid_for(K * N), 256, 0, stream>>>(
      qweight, scales, zeros, g_idx, bits, K, N, group_size, out, out_code);
  return cudaGetLastError();
}

cudaError_t dequant_fp8(const uint8_t* q, const float* scale, int64_t K, int64_t N, int block_n,
                        int block_k, void* out, int out_code, cudaStream_t stream) {
  dequant_fp8_kernel<<<cuda_device::grid_for(K * N), 256, 0, stream>>>(q, scale, K, N, block_n,
                                                                       block_k, out, out_code);
  return cudaGetLastError();
}

}  // namespace qlinear::cuda_launch

namespace qlinear::cuda_device {

bool chained_launches() {
  static const bool allowed = [] {
    const char* v = std::getenv("QLINEAR_CUDA_PDL");
    return v == nullptr || std::atoi(v) != 0;
  }();
  if (!allowed) return false;
  // Per device: the compute capability decides (a process may see GPUs of several kinds).
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices] = {};  // 0 unknown, 1 no, 2 yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return false;
  int state = known[device].load(std::memory_order_relaxed);
  if (state == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      return false;
    }
    state = major >= 9 ? 2 : 1;
    known[device].store(state, std::memory_order_relaxed);
  }
  return state == 2;
}

}  // namespace qlinear::cuda_device
