// The OpenCL backend's host side for kernels and decoder ops (only with QLINEAR_WITH_OPENCL):
// cl_int errors as Status naming the call, RAII owners of cl objects, the DeviceContext of an
// OpenCL device with its program cache, and launching a kernel with typed arguments.
//
// Programs are built from the `.cl` files embedded at build time (opencl_sources.h): a program's
// source is common.cl followed by the kernel's own file. The cache is keyed by source + build
// options + device (name, vendor, driver and OpenCL C versions): in memory for the process, and
// on disk as program binaries under $XDG_CACHE_HOME/qlinear/opencl (or ~/.cache/qlinear/opencl),
// so a second process does not compile again. QLINEAR_OPENCL_CACHE=off keeps it in memory only.
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/status.h"
#include "kernels/device_context.h"
#include "qlinear/view.h"

namespace qlinear::opencl {

// "CL_OUT_OF_RESOURCES" for -5, "error -9999" for codes OpenCL does not name.
std::string error_name(cl_int error);
// ok, or an error naming the call, the error and `what` (a kernel or buffer).
Status check(cl_int error, std::string_view call, std::string_view what = "");

// Owns one reference of a cl object, released on destruction.
template <class T, cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T object) : object_(object) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  T get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  void reset() {
    if (object_ != nullptr) (void)Release(object_);
    object_ = nullptr;
  }

 private:
  T object_ = nullptr;
};
using ContextHandle = Handle<cl_context, clReleaseContext>;
using QueueHandle = Handle<cl_command_queue, clReleaseCommandQueue>;
using ProgramHandle = Handle<cl_program, clReleaseProgram>;
using KernelHandle = Handle<cl_kernel, clReleaseKernel>;
using BufferHandle = Handle<cl_mem, clReleaseMemObject>;

// What the kernels read from a device besides the Device descriptor.
struct DeviceProperties {
  std::string extensions;
  std::string driver_version;
  std::string opencl_c_version;
  std::size_t max_work_group = 1;
  std::size_t base_align_bytes = 128;
  bool correctly_rounded_divide = false;  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
  std::string platform_version;
};

struct CacheStats {
  int built_from_source = 0;  // clBuildProgram on source text (a real compile)
  int loaded_from_disk = 0;   // program binaries read back from the cache folder
  int from_memory = 0;        // found in this process's map
};

class Context final : public DeviceContext {
 public:
  Context(Device device, cl_device_id id, ContextHandle context, QueueHandle queue,
          DeviceProperties properties);
  ~Context() override;

  const Device& device() const override { return device_; }
  const Allocator& allocator() const override;
  const Allocator& staging_allocator() const override;
  Status upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) override;
  Status download(void* dst, const void* src, std::size_t src_offset, std::size_t bytes) override;
  Status fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) override;
  void* default_stream() const override { return queue_.get(); }
  Status synchronize(void* stream) override;

  cl_device_id id() const { return id_; }
  cl_context context() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }
  const DeviceProperties& properties() const { return properties_; }
  bool has_extension(std::string_view name) const;

  // The built program of embedded source `file` ("int_gemm_portable.cl") with `options` added to
  // the common ones, from the cache when it holds it. Errors carry the build log.
  Result<cl_program> program(std::string_view file, std::string_view options = "");
  // A new kernel object of that program (kernels are not shared: clSetKernelArg is stateful).
  Result<KernelHandle> kernel(std::string_view file, std::string_view name,
                              std::string_view options = "");
  CacheStats cache_stats() const;
  // Forgets the in-memory programs (tests: the next program() reads the disk cache).
  void clear_memory_cache();

  // A device buffer of `bytes` (at least 1) owned by the caller.
  Result<BufferHandle> buffer(std::size_t bytes, std::string_view what);
  // A buffer holding `bytes` of host data.
  Result<BufferHandle> upload_buffer(const void* data, std::size_t bytes, std::string_view what);

 private:
  class BufferAllocator;
  Device device_;
  cl_device_id id_;
  ContextHandle context_;
  QueueHandle queue_;
  DeviceProperties properties_;
  std::unique_ptr<BufferAllocator> allocator_;
  mutable std::mutex mutex_;
  std::map<std::string, ProgramHandle> programs_;  // key: hash of source + options + device
  CacheStats stats_;
};

// The OpenCL context behind a DeviceContext (an error naming the device otherwise).
Result<Context*> context_of(DeviceContext& device);

// The folder program binaries are cached in ("" when caching on disk is off or no home exists).
std::string cache_folder();

// Kernel arguments: buffers as cl_mem, scalars of their own width.
struct Arg {
  std::size_t size;
  const void* value;
};
template <class T>
Arg arg(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {sizeof(T), &value};
}
// Sets the arguments in order and enqueues a 1-, 2- or 3-dimensional NDRange on `queue`; the
// global size is rounded up to a multiple of `local` (local {0}: the runtime chooses). `what`
// names the kernel in errors.
Status launch(cl_command_queue queue, cl_kernel kernel, std::string_view what,
              std::initializer_list<std::size_t> global, std::initializer_list<std::size_t> local,
              std::initializer_list<Arg> args);

// The cl_mem of an OpenCL view, and a view's element offset as the kernels take it.
inline cl_mem mem_of(const void* data) { return static_cast<cl_mem>(const_cast<void*>(data)); }

// The element-type code the .cl files switch on (QL_F32 / QL_BF16 / QL_F16 in common.cl).
int dtype_code(DType dtype);

// Carves a run's buffers out of an OpenCL workspace: byte offsets into its one cl_mem, each
// aligned to 256 bytes. Sizing mode (no workspace) only counts, like WorkspaceCarver.
class WorkspaceOffsets {
 public:
  static constexpr std::size_t kAlignment = 256;
  WorkspaceOffsets() = default;
  explicit WorkspaceOffsets(const Workspace& workspace)
      : buffer_(mem_of(workspace.data)), capacity_(workspace.bytes) {}
  // Byte offset of `bytes` new bytes.
  uint64_t take(std::size_t bytes) {
    used_ = (used_ + kAlignment - 1) / kAlignment * kAlignment;
    const uint64_t at = used_;
    used_ += bytes;
    if (buffer_ != nullptr && used_ > capacity_) overflowed_ = true;
    return at;
  }
  cl_mem buffer() const { return buffer_; }
  std::size_t used() const { return used_; }
  bool overflowed() const { return overflowed_; }

 private:
  cl_mem buffer_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  bool overflowed_ = false;
};

}  // namespace qlinear::opencl
