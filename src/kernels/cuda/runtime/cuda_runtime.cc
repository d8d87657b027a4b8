// The CUDA backend's runtime: device detection, and one DeviceContext per GPU (device and pinned
// allocators, a non-blocking default stream, synchronous uploads for load time).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/cuda/runtime/cuda_check.h"
#include "kernels/cuda/runtime/fill.cuh"
#include "kernels/device_context.h"

namespace qlinear {

Status cuda_status(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return Status::ok_status();
  return make_error(ErrorCode::kIo, "{}: {} ({})", call, cudaGetErrorString(error),
                    cudaGetErrorName(error));
}

Status cublas_status(cublasStatus_t status, std::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  return make_error(ErrorCode::kIo, "{}: cuBLAS status {}", call, static_cast<int>(status));
}

namespace {

// cudaMalloc on one device (the current device is set for each call: threads may differ).
class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}
  Location location() const override { return Location::cuda(index_); }
  Result<void*> allocate(std::size_t bytes) const override {
    QL_CUDA(cudaSetDevice(index_));
    void* p = nullptr;
    const cudaError_t error = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free error state of this thread
      return make_error(ErrorCode::kIo, "cuda:{}: cudaMalloc of {} bytes failed: {}", index_, bytes,
                        cudaGetErrorString(error));
    }
    return p;
  }
  void deallocate(void* data) const noexcept override {
    if (data == nullptr) return;
    (void)cudaSetDevice(index_);
    (void)cudaFree(data);
  }

 private:
  int index_;
};

// Page-locked host memory: uploads from it run at the bus's speed and can be asynchronous.
class PinnedAllocator final : public Allocator {
 public:
  Location location() const override { return Location::pinned(); }
  Result<void*> allocate(std::size_t bytes) const override {
    void* p = nullptr;
    const cudaError_t error = cudaMallocHost(&p, bytes == 0 ? 64 : bytes);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return make_error(ErrorCode::kIo, "cudaMallocHost of {} bytes failed: {}", bytes,
                        cudaGetErrorString(error));
    }
    return p;
  }
  void deallocate(void* data) const noexcept override {
    if (data != nullptr) (void)cudaFreeHost(data);
  }
};

// A recorded CUDA graph, replayed on the stream it was captured from.
class CudaGraphWork final : public RecordedWork {
 public:
  CudaGraphWork(cudaGraphExec_t exec, cudaStream_t stream, int device)
      : exec_(exec), stream_(stream), device_(device) {}
  ~CudaGraphWork() override { (void)cudaGraphExecDestroy(exec_); }
  CudaGraphWork(const CudaGraphWork&) = delete;
  CudaGraphWork& operator=(const CudaGraphWork&) = delete;
  Status replay() override {
    QL_CUDA(cudaSetDevice(device_));
    QL_CUDA(cudaGraphLaunch(exec_, stream_));
    return Status::ok_status();
  }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  int device_;
};

// The captured graph is not needed once instantiated (or when the capture failed).
struct GraphGuard {
  cudaGraph_t graph;
  ~GraphGuard() {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

class CudaContext final : public DeviceContext {
 public:
  CudaContext(Device device, cudaStream_t stream)
      : device_(std::move(device)), allocator_(device_.index), stream_(stream) {}
  ~CudaContext() override {
    // Contexts live for the process; at exit the driver may already be shutting down.
    (void)cudaStreamDestroy(stream_);
  }

  const Device& device() const override { return device_; }
  const Allocator& allocator() const override { return allocator_; }
  const Allocator& staging_allocator() const override { return pinned_; }

  Status upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) override {
    QL_CUDA(cudaSetDevice(device_.index));
    QL_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + dst_offset, src, bytes,
                            cudaMemcpyHostToDevice, stream_));
    QL_CUDA(cudaStreamSynchronize(stream_));
    return Status::ok_status();
  }
  Status download(void* dst, const void* src, std::size_t src_offset, std::size_t bytes) override {
    QL_CUDA(cudaSetDevice(device_.index));
    QL_CUDA(cudaMemcpyAsync(dst, static_cast<const char*>(src) + src_offset, bytes,
                            cudaMemcpyDeviceToHost, stream_));
    QL_CUDA(cudaStreamSynchronize(stream_));
    return Status::ok_status();
  }
  Status fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) override {
    QL_CUDA(cudaSetDevice(device_.index));
    QL_CUDA(
        cuda_runtime::fill_words(static_cast<char*>(dst) + dst_offset, pattern, bytes, stream_));
    QL_CUDA(cudaStreamSynchronize(stream_));
    return Status::ok_status();
  }
  void* default_stream() const override { return stream_; }
  Status synchronize(void* stream) override {
    QL_CUDA(cudaSetDevice(device_.index));
    QL_CUDA(cudaStreamSynchronize(stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_));
    return Status::ok_status();
  }
  Result<std::unique_ptr<RecordedWork>> record(const std::function<Status()>& body) override {
    QL_CUDA(cudaSetDevice(device_.index));
    // Thread-local mode: another thread's unsafe calls (a cudaMalloc while loading) do not
    // break this capture, while a wait or a synchronous copy inside `body` does, and is reported.
    QL_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const Status body_status = body();
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    (void)cudaGetLastError();  // a failed capture leaves its error; the stream is usable again
    GraphGuard guard{graph};
    QL_RETURN_IF_ERROR(body_status);
    QL_RETURN_IF_ERROR(cuda_status(
        end, "cudaStreamEndCapture (the recorded work made a call a CUDA graph cannot hold)"));
    cudaGraphExec_t exec = nullptr;
    QL_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    return std::unique_ptr<RecordedWork>(new CudaGraphWork(exec, stream_, device_.index));
  }

 private:
  Device device_;
  CudaAllocator allocator_;
  PinnedAllocator pinned_;
  cudaStream_t stream_;
};

}  // namespace

Result<Device> detect_cuda_device(int index) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return make_error(ErrorCode::kUnsupported,
                      "device \"cuda:{}\": the CUDA runtime finds no usable GPU: {} ({})", index,
                      cudaGetErrorString(error), cudaGetErrorName(error));
  }
  if (index >= count) {
    return make_error(ErrorCode::kInvalidArgument,
                      "device \"cuda:{}\": this machine has {} CUDA device{} (cuda:0..cuda:{})",
                      index, count, count == 1 ? "" : "s", count - 1);
  }
  cudaDeviceProp prop{};
  QL_CUDA(cudaGetDeviceProperties(&prop, index));
  int memory_khz = 0;
  int bus_bits = 0;
  QL_CUDA(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, index));
  QL_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, index));
  Device device;
  device.platform = Platform::kCuda;
  device.index = index;
  device.name = fmt::format("cuda:{} {}", index, prop.name);
  device.sm = prop.major * 10 + prop.minor;
  device.sm_count = prop.multiProcessorCount;
  device.l2_bytes = static_cast<uint64_t>(prop.l2CacheSize);
  device.memory_bytes = prop.totalGlobalMem;
  // Double data rate: two transfers per clock on each of bus_bits / 8 bytes.
  device.memory_gbps = 2.0 * memory_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  return device;
}

Result<DeviceContext*> cuda_device_context(const Device& device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<CudaContext>> contexts;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device.index);
  if (it == contexts.end()) {
    QL_CUDA(cudaSetDevice(device.index));
    cudaStream_t stream = nullptr;
    QL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    it = contexts.emplace(device.index, std::make_unique<CudaContext>(device, stream)).first;
  }
  return static_cast<DeviceContext*>(it->second.get());
}

}  // namespace qlinear
