#include "kernels/cuda/runtime/cuda_bench.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/runtime/cuda_check.h"
#include "kernels/cuda/runtime/fill.cuh"

namespace qlinear::cuda_bench {
namespace {

// Owns CUDA events and buffers of one measurement; frees them on every return path.
struct Events {
  std::vector<cudaEvent_t> events;
  ~Events() {
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
  }
  Status create(std::size_t count) {
    events.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      cudaEvent_t e = nullptr;
      QL_CUDA(cudaEventCreate(&e));
      events.push_back(e);
    }
    return Status::ok_status();
  }
};

struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p != nullptr) (void)cudaFree(p);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Result<double> copy_bandwidth_gbps(int device, std::size_t bytes, int reps) {
  QL_CUDA(cudaSetDevice(device));
  DeviceBuffer a;
  DeviceBuffer b;
  QL_CUDA(cudaMalloc(&a.p, bytes));
  QL_CUDA(cudaMalloc(&b.p, bytes));
  QL_CUDA(cudaMemset(a.p, 1, bytes));
  QL_CUDA(cudaMemset(b.p, 0, bytes));
  cudaStream_t stream = nullptr;
  QL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto copy = [&](int) -> Status {
    return cuda_status(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream),
                       "cudaMemcpyAsync (device to device)");
  };
  Result<std::vector<double>> times = time_calls(device, stream, reps + 1, copy);
  (void)cudaStreamDestroy(stream);
  QL_RETURN_IF_ERROR(times.status());
  std::vector<double> t = *times;
  t.erase(t.begin());  // the first copy warms up
  return 2.0 * static_cast<double>(bytes) / median(t) / 1e9;
}

Result<std::vector<double>> time_calls(int device, void* stream_ptr, int reps,
                                       const std::function<Status(int)>& call) {
  QL_CUDA(cudaSetDevice(device));
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  Events events;
  QL_RETURN_IF_ERROR(events.create(2 * static_cast<std::size_t>(reps)));
  // Enough spin for the host to queue every call (a few microseconds each) before the GPU
  // reaches them; capped so that a long run is not held back by more than 20 ms.
  const uint64_t spin_ns = std::min<uint64_t>(20'000'000, 50'000ull * static_cast<uint64_t>(reps));
  QL_CUDA(cuda_runtime::spin(spin_ns, stream));
  for (int i = 0; i < reps; ++i) {
    QL_CUDA(cudaEventRecord(events.events[2 * i], stream));
    QL_RETURN_IF_ERROR(call(i));
    QL_CUDA(cudaEventRecord(events.events[2 * i + 1], stream));
  }
  QL_CUDA(cudaStreamSynchronize(stream));
  QL_CUDA(cudaGetLastError());
  std::vector<double> seconds(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    float ms = 0.0f;
    QL_CUDA(cudaEventElapsedTime(&ms, events.events[2 * i], events.events[2 * i + 1]));
    seconds[i] = ms * 1e-3;
  }
  return seconds;
}

}  // namespace qlinear::cuda_bench
