// DeviceContext: what prepare() and the runner need from a real device: its memory (device and
// staging allocators), uploads and downloads on its default queue, and that queue. One context
// per device per process, created on first use (device_context()); the CPU has a trivial one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"
#include "qlinear/device.h"
#include "qlinear/view.h"

namespace qlinear {

// Work recorded once from a device's default queue and submitted again as one unit (a CUDA
// graph): the runner's decode step, whose buffers and launch arguments are the same every token.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  // Queues the recorded work on the default queue again; does not wait.
  virtual Status replay() = 0;
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual const Device& device() const = 0;
  // Where prepared weights and run buffers live: host for the cpu, cuda:i / opencl:i.
  Location location() const { return allocator().location(); }
  // Device memory (host memory for the cpu).
  virtual const Allocator& allocator() const = 0;
  // Host memory the device reads fastest for uploads (pinned for CUDA; plain host otherwise).
  virtual const Allocator& staging_allocator() const = 0;
  // Copies host bytes to device memory `dst` (+ dst_offset bytes; OpenCL buffers are handles)
  // and waits for the copy. For load time, never inside a run.
  virtual Status upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) = 0;
  // Copies device bytes to host memory and waits. The copy is queued on the default queue, behind
  // the work already queued there, so it also waits for that work.
  virtual Status download(void* dst, const void* src, std::size_t src_offset,
                          std::size_t bytes) = 0;
  // Writes the 32-bit `pattern` over `bytes` (a multiple of 4) at dst + dst_offset and waits
  // (tests poison outputs with NaN bits before a run; the runner zeroes caches).
  virtual Status fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) = 0;
  // The device's default queue (a cudaStream_t / cl_command_queue), or null for the cpu.
  virtual void* default_stream() const = 0;
  // Waits until the default queue (or `stream`) is idle.
  virtual Status synchronize(void* stream = nullptr) = 0;
  // Records what `body` queues on the default queue, without running it, into work that
  // replay() queues again. kUnsupported where the device cannot record (the cpu, OpenCL). An
  // error of `body`, or a call inside it that cannot be recorded (a wait, a synchronous copy),
  // ends the recording and is returned; the queue is usable afterwards either way.
  virtual Result<std::unique_ptr<RecordedWork>> record(const std::function<Status()>& body);
};

// The context of a real device (created once per device and kept for the process). A simulated
// device (--target) is an error: it can be explained, not run.
Result<DeviceContext*> device_context(const Device& device);

// Backends implement these; without the backend compiled in they return kUnsupported errors
// (kernels/cuda/runtime/, kernels/opencl/runtime/).
Result<DeviceContext*> cuda_device_context(const Device& device);
Result<DeviceContext*> opencl_device_context(const Device& device);
Result<Device> detect_cuda_device(int index);
Result<Device> detect_opencl_device(int index, bool intel_gpu_only);

}  // namespace qlinear
