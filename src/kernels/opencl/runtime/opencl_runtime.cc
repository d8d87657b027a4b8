// The OpenCL backend's runtime: device discovery over every platform (GPUs first), and one
// DeviceContext per device (buffers as cl_mem handles, an in-order queue, blocking transfers for
// load time). Devices are numbered across platforms in the order the ICD loader reports them.
#include <CL/cl.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/device_context.h"

namespace qlinear {
namespace {

Status cl_status(cl_int error, std::string_view call) {
  if (error == CL_SUCCESS) return Status::ok_status();
  return make_error(ErrorCode::kIo, "{}: OpenCL error {}", call, error);
}
#define QL_CL(call) QL_RETURN_IF_ERROR(cl_status((call), #call))

std::string device_string(cl_device_id id, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(id, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetDeviceInfo(id, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

// Every device of every platform, in loader order.
Result<std::vector<cl_device_id>> all_devices() {
  cl_uint platforms = 0;
  const cl_int error = clGetPlatformIDs(0, nullptr, &platforms);
  if (error != CL_SUCCESS || platforms == 0) {
    return make_error(ErrorCode::kUnsupported,
                      "no OpenCL platform is installed (clGetPlatformIDs: {}); install an ICD such "
                      "as pocl-opencl-icd or intel-opencl-icd",
                      error);
  }
  std::vector<cl_platform_id> ids(platforms);
  QL_CL(clGetPlatformIDs(platforms, ids.data(), nullptr));
  std::vector<cl_device_id> devices;
  for (cl_platform_id platform : ids) {
    cl_uint count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> found(count);
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, found.data(), nullptr) != CL_SUCCESS) {
      continue;
    }
    devices.insert(devices.end(), found.begin(), found.end());
  }
  if (devices.empty()) {
    return make_error(ErrorCode::kUnsupported, "the OpenCL platforms report no devices");
  }
  return devices;
}

Device describe(cl_device_id id, int index) {
  Device device;
  device.platform = Platform::kOpenCl;
  device.index = index;
  device.vendor = device_string(id, CL_DEVICE_VENDOR);
  const std::string name = device_string(id, CL_DEVICE_NAME);
  device.name = fmt::format("opencl:{} {}", index, name);
  cl_device_type type = 0;
  (void)clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
  device.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  cl_ulong memory = 0;
  (void)clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(memory), &memory, nullptr);
  device.memory_bytes = memory;
  const std::string extensions = device_string(id, CL_DEVICE_EXTENSIONS);
  device.fp16 = extensions.find("cl_khr_fp16") != std::string::npos;
  std::string vendor_lower = device.vendor;
  std::transform(vendor_lower.begin(), vendor_lower.end(), vendor_lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  device.intel_gpu = device.is_gpu && vendor_lower.find("intel") != std::string::npos;
  if (extensions.find("cl_intel_subgroups") != std::string::npos ||
      extensions.find("cl_khr_subgroups") != std::string::npos) {
    device.subgroup_sizes = {8, 16, 32};  // refined per kernel at build time
  }
  return device;
}

// clCreateBuffer: the "pointer" is the cl_mem handle.
class ClAllocator final : public Allocator {
 public:
  ClAllocator(cl_context context, int index) : context_(context), index_(index) {}
  Location location() const override { return Location::opencl(index_); }
  Result<void*> allocate(std::size_t bytes) const override {
    cl_int error = CL_SUCCESS;
    cl_mem buffer =
        clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes == 0 ? 64 : bytes, nullptr, &error);
    if (error != CL_SUCCESS) {
      return make_error(ErrorCode::kIo, "opencl:{}: clCreateBuffer of {} bytes failed (error {})",
                        index_, bytes, error);
    }
    return static_cast<void*>(buffer);
  }
  void deallocate(void* data) const noexcept override {
    if (data != nullptr) (void)clReleaseMemObject(static_cast<cl_mem>(data));
  }

 private:
  cl_context context_;
  int index_;
};

class ClContext final : public DeviceContext {
 public:
  ClContext(Device device, cl_device_id id, cl_context context, cl_command_queue queue)
      : device_(std::move(device)),
        id_(id),
        context_(context),
        queue_(queue),
        allocator_(context, device_.index) {}
  ~ClContext() override {
    (void)clReleaseCommandQueue(queue_);
    (void)clReleaseContext(context_);
  }

  const Device& device() const override { return device_; }
  const Allocator& allocator() const override { return allocator_; }
  const Allocator& staging_allocator() const override { return host_allocator(); }
  Status upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) override {
    QL_CL(clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(dst), CL_TRUE, dst_offset, bytes, src, 0,
                               nullptr, nullptr));
    return Status::ok_status();
  }
  Status download(void* dst, const void* src, std::size_t src_offset, std::size_t bytes) override {
    QL_CL(clEnqueueReadBuffer(queue_, static_cast<cl_mem>(const_cast<void*>(src)), CL_TRUE,
                              src_offset, bytes, dst, 0, nullptr, nullptr));
    return Status::ok_status();
  }
  Status fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) override {
    QL_CL(clEnqueueFillBuffer(queue_, static_cast<cl_mem>(dst), &pattern, sizeof(pattern),
                              dst_offset, bytes / 4 * 4, 0, nullptr, nullptr));
    QL_CL(clFinish(queue_));
    return Status::ok_status();
  }
  void* default_stream() const override { return queue_; }
  Status synchronize(void* stream) override {
    QL_CL(clFinish(stream != nullptr ? static_cast<cl_command_queue>(stream) : queue_));
    return Status::ok_status();
  }
  cl_device_id id() const { return id_; }

 private:
  Device device_;
  cl_device_id id_;
  cl_context context_;
  cl_command_queue queue_;
  ClAllocator allocator_;
};

}  // namespace

Result<Device> detect_opencl_device(int index, bool intel_gpu_only) {
  QL_ASSIGN_OR_RETURN(std::vector<cl_device_id> devices, all_devices());
  if (intel_gpu_only) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Device d = describe(devices[i], static_cast<int>(i));
      if (d.intel_gpu) return d;
    }
    return make_error(ErrorCode::kUnsupported,
                      "device \"xpu\": no Intel GPU among the {} OpenCL device{} (install "
                      "intel-opencl-icd on a machine with one; --target xpu simulates it)",
                      devices.size(), devices.size() == 1 ? "" : "s");
  }
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "device \"opencl:{}\": this machine has {} OpenCL device{} (opencl:0..{})",
                      index, devices.size(), devices.size() == 1 ? "" : "s", devices.size() - 1);
  }
  return describe(devices[static_cast<std::size_t>(index)], index);
}

Result<DeviceContext*> opencl_device_context(const Device& device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<ClContext>> contexts;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device.index);
  if (it == contexts.end()) {
    QL_ASSIGN_OR_RETURN(std::vector<cl_device_id> devices, all_devices());
    if (device.index < 0 || static_cast<std::size_t>(device.index) >= devices.size()) {
      return make_error(ErrorCode::kInvalidArgument, "opencl:{} is not a device of this machine",
                        device.index);
    }
    cl_device_id id = devices[static_cast<std::size_t>(device.index)];
    cl_int error = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &id, nullptr, nullptr, &error);
    QL_RETURN_IF_ERROR(cl_status(error, "clCreateContext"));
    cl_command_queue queue = clCreateCommandQueue(context, id, 0, &error);
    if (error != CL_SUCCESS) {
      (void)clReleaseContext(context);
      return cl_status(error, "clCreateCommandQueue");
    }
    it = contexts.emplace(device.index, std::make_unique<ClContext>(device, id, context, queue))
             .first;
  }
  return static_cast<DeviceContext*>(it->second.get());
}

}  // namespace qlinear
