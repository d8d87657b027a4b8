// Host-side helpers of the CUDA kernels' prepare() and run(): dtype codes for the launches,
// uploads of host vectors at prepare time, the stream of a run, and carving a run's buffers out of
// the caller's device workspace.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cuda/launch.h"
#include "kernels/device_context.h"
#include "qlinear/dtype.h"
#include "qlinear/linear.h"

namespace qlinear::cuda_host {

inline int dtype_code(DType d) {
  if (d == DType::kF8E4M3) return cuda_launch::kF8;  // an FP8 KV cache's codes
  return d == DType::kF32 ? cuda_launch::kF32
                          : (d == DType::kBF16 ? cuda_launch::kBF16 : cuda_launch::kF16);
}

// A device tensor holding `values` (uploaded through the context, which waits for the copy).
template <class T>
Result<Tensor> upload(DeviceContext& device, const std::vector<T>& values, DType dtype) {
  QL_ASSIGN_OR_RETURN(
      Tensor t, Tensor::allocate(dtype, {static_cast<int64_t>(values.size())}, device.allocator()));
  if (!values.empty()) {
    QL_RETURN_IF_ERROR(device.upload(t.data(), 0, values.data(), values.size() * sizeof(T)));
  }
  return t;
}

// An uninitialised device buffer of `bytes` bytes.
inline Result<Tensor> device_bytes(DeviceContext& device, std::size_t bytes) {
  return Tensor::allocate(DType::kU8, {static_cast<int64_t>(bytes == 0 ? 1 : bytes)},
                          device.allocator());
}

// Carves 256-byte aligned buffers out of a device workspace (sizing mode without one). A kernel
// calls the same carve sequence from workspace_bytes() and do_run(), as with WorkspaceCarver.
class DeviceCarver {
 public:
  static constexpr std::size_t kAlignment = 256;
  DeviceCarver() = default;
  explicit DeviceCarver(const Workspace& ws)
      : base_(reinterpret_cast<uintptr_t>(ws.data)), capacity_(ws.bytes) {
    // The caller's workspace may start anywhere: the first buffer starts at the next boundary.
    used_ = base_ == 0 ? 0 : (kAlignment - base_ % kAlignment) % kAlignment;
  }
  template <class T>
  T* take(std::size_t count) {
    used_ = (used_ + kAlignment - 1) / kAlignment * kAlignment;
    const std::size_t bytes = count * sizeof(T);
    T* p = nullptr;
    if (base_ != 0) {
      if (used_ + bytes > capacity_) {
        overflowed_ = true;
      } else {
        p = reinterpret_cast<T*>(base_ + used_);
      }
    }
    used_ += bytes;
    return p;
  }
  // Bytes a sizing carver took, with room for the worst start alignment.
  std::size_t bytes_needed() const { return used_ + kAlignment; }
  bool overflowed() const { return overflowed_; }

 private:
  uintptr_t base_ = 0;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  bool overflowed_ = false;
};

// The stream a run goes to: the caller's, else the device's default queue.
inline cudaStream_t run_stream(const ExecContext& ctx, void* default_stream) {
  return static_cast<cudaStream_t>(ctx.stream != nullptr ? ctx.stream : default_stream);
}

// The leading dimension a launch may use for a view of `rows` rows (the contract leaves a one-row
// view's ld unconstrained).
inline int64_t usable_ld(int64_t rows, int64_t ld, int64_t cols) { return rows > 1 ? ld : cols; }

}  // namespace qlinear::cuda_host
