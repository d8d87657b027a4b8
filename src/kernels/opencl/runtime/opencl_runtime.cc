// The OpenCL backend's runtime: device discovery over every platform, one Context per device
// (buffers as cl_mem handles, an in-order queue, blocking transfers for load time) and its
// program cache (memory, then program binaries on disk). Devices are numbered across platforms
// in the order the ICD loader reports them.
#include "kernels/opencl/runtime/opencl_runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "kernels/opencl/runtime/opencl_sources.h"

namespace qlinear {
namespace opencl {
namespace {

// cl_intel_required_subgroup_size: the subgroup sizes a device offers.
constexpr cl_device_info kDeviceSubGroupSizesIntel = 0x4108;

std::string device_string(cl_device_id id, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(id, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetDeviceInfo(id, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string platform_string(cl_platform_id id, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(id, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (clGetPlatformInfo(id, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

bool has_word(const std::string& list, std::string_view word) {
  std::size_t at = 0;
  while ((at = list.find(word, at)) != std::string::npos) {
    const std::size_t end = at + word.size();
    const bool starts = at == 0 || list[at - 1] == ' ';
    const bool ends = end == list.size() || list[end] == ' ';
    if (starts && ends) return true;
    at = end;
  }
  return false;
}

// Every device of every platform, in loader order.
Result<std::vector<cl_device_id>> all_devices() {
  cl_uint platforms = 0;
  const cl_int error = clGetPlatformIDs(0, nullptr, &platforms);
  if (error != CL_SUCCESS || platforms == 0) {
    return make_error(ErrorCode::kUnsupported,
                      "no OpenCL platform is installed (clGetPlatformIDs: {}); install an ICD such "
                      "as pocl-opencl-icd or intel-opencl-icd, or simulate one for explain with "
                      "--target xpu",
                      error == CL_SUCCESS ? "0 platforms" : error_name(error));
  }
  std::vector<cl_platform_id> ids(platforms);
  QL_RETURN_IF_ERROR(check(clGetPlatformIDs(platforms, ids.data(), nullptr), "clGetPlatformIDs"));
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
    return make_error(ErrorCode::kUnsupported,
                      "the {} OpenCL platform{} report no devices (clGetDeviceIDs); simulate one "
                      "for explain with --target xpu",
                      platforms, platforms == 1 ? "" : "s");
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
  device.fp16 = has_word(extensions, "cl_khr_fp16");
  std::string vendor_lower = device.vendor;
  std::transform(vendor_lower.begin(), vendor_lower.end(), vendor_lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  device.intel_gpu = device.is_gpu && vendor_lower.find("intel") != std::string::npos;
  device.intel_subgroups = has_word(extensions, "cl_intel_subgroups");
  device.intel_dpas = has_word(extensions, "cl_intel_subgroup_matrix_multiply_accumulate");
  if (has_word(extensions, "cl_intel_required_subgroup_size")) {
    std::size_t bytes = 0;
    if (clGetDeviceInfo(id, kDeviceSubGroupSizesIntel, 0, nullptr, &bytes) == CL_SUCCESS &&
        bytes > 0) {
      std::vector<std::size_t> sizes(bytes / sizeof(std::size_t));
      if (clGetDeviceInfo(id, kDeviceSubGroupSizesIntel, bytes, sizes.data(), nullptr) ==
          CL_SUCCESS) {
        for (std::size_t s : sizes) device.subgroup_sizes.push_back(static_cast<int>(s));
      }
    }
  } else if (device.intel_subgroups || has_word(extensions, "cl_khr_subgroups")) {
    device.subgroup_sizes = {8, 16, 32};  // no size query: what Intel GPUs offer
  }
  return device;
}

DeviceProperties properties_of(cl_device_id id) {
  DeviceProperties p;
  p.extensions = device_string(id, CL_DEVICE_EXTENSIONS);
  p.driver_version = device_string(id, CL_DRIVER_VERSION);
  p.opencl_c_version = device_string(id, CL_DEVICE_OPENCL_C_VERSION);
  (void)clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(p.max_work_group),
                        &p.max_work_group, nullptr);
  cl_uint align_bits = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits,
                      nullptr) == CL_SUCCESS &&
      align_bits >= 8) {
    p.base_align_bytes = align_bits / 8;
  }
  cl_device_fp_config fp = 0;
  (void)clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr);
  p.correctly_rounded_divide = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  cl_platform_id platform = nullptr;
  if (clGetDeviceInfo(id, CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr) == CL_SUCCESS) {
    p.platform_version = platform_string(platform, CL_PLATFORM_VERSION);
  }
  return p;
}

// FNV-1a, 64 bits: the cache key's name on disk.
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

constexpr std::string_view kBinaryMagic = "qlinear-opencl-binary-1\n";

std::string program_log(cl_program program, cl_device_id id) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) {
    return "";
  }
  std::string log(size, '\0');
  (void)clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The binary of a built program for its one device ("" when the runtime gives none).
std::string program_binary(cl_program program) {
  std::size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return "";
  }
  std::string binary(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) != CL_SUCCESS) {
    return "";
  }
  return binary;
}

// Reads a cached binary written for `key`; "" when absent or written for another key.
std::string read_cached(const std::filesystem::path& path, std::string_view key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string header = fmt::format("{}{}\n", kBinaryMagic, key.size());
  if (content.size() < header.size() + key.size() ||
      content.compare(0, header.size(), header) != 0 ||
      content.compare(header.size(), key.size(), key) != 0) {
    return "";
  }
  return content.substr(header.size() + key.size());
}

// Writes atomically (a temporary file renamed into place); failures only warn.
void write_cached(const std::filesystem::path& path, std::string_view key,
                  const std::string& binary) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    log_warn("opencl: cannot create the program cache folder {}: {}", path.parent_path().string(),
             ec.message());
    return;
  }
  const std::filesystem::path tmp =
      path.string() + fmt::format(".tmp{}", static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kBinaryMagic << key.size() << '\n' << key << binary;
    if (!out) {
      log_warn("opencl: cannot write the program cache file {}", tmp.string());
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    log_warn("opencl: cannot rename {} into the program cache: {}", tmp.string(), ec.message());
    std::filesystem::remove(tmp, ec);
  }
}

}  // namespace

std::string error_name(cl_int error) {
  switch (error) {
#define QL_CL_ERROR(name) \
  case name:              \
    return #name;
    QL_CL_ERROR(CL_SUCCESS)
    QL_CL_ERROR(CL_DEVICE_NOT_FOUND)
    QL_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    QL_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    QL_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    QL_CL_ERROR(CL_OUT_OF_RESOURCES)
    QL_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    QL_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    QL_CL_ERROR(CL_MEM_COPY_OVERLAP)
    QL_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    QL_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    QL_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    QL_CL_ERROR(CL_MAP_FAILURE)
    QL_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    QL_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    QL_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    QL_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    QL_CL_ERROR(CL_INVALID_VALUE)
    QL_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    QL_CL_ERROR(CL_INVALID_PLATFORM)
    QL_CL_ERROR(CL_INVALID_DEVICE)
    QL_CL_ERROR(CL_INVALID_CONTEXT)
    QL_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    QL_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    QL_CL_ERROR(CL_INVALID_HOST_PTR)
    QL_CL_ERROR(CL_INVALID_MEM_OBJECT)
    QL_CL_ERROR(CL_INVALID_BINARY)
    QL_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    QL_CL_ERROR(CL_INVALID_PROGRAM)
    QL_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    QL_CL_ERROR(CL_INVALID_KERNEL_NAME)
    QL_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    QL_CL_ERROR(CL_INVALID_KERNEL)
    QL_CL_ERROR(CL_INVALID_ARG_INDEX)
    QL_CL_ERROR(CL_INVALID_ARG_VALUE)
    QL_CL_ERROR(CL_INVALID_ARG_SIZE)
    QL_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    QL_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    QL_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    QL_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    QL_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    QL_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    QL_CL_ERROR(CL_INVALID_EVENT)
    QL_CL_ERROR(CL_INVALID_OPERATION)
    QL_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    QL_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    QL_CL_ERROR(CL_INVALID_PROPERTY)
#undef QL_CL_ERROR
    default:
      return fmt::format("error {}", error);
  }
}

Status check(cl_int error, std::string_view call, std::string_view what) {
  if (error == CL_SUCCESS) return Status::ok_status();
  if (what.empty()) return make_error(ErrorCode::kIo, "{}: {}", call, error_name(error));
  return make_error(ErrorCode::kIo, "{} ({}): {}", call, what, error_name(error));
}

int dtype_code(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 0;
    case DType::kBF16:
      return 1;
    case DType::kF16:
      return 2;
    default:
      return -1;
  }
}

std::string cache_folder() {
  const char* mode = std::getenv("QLINEAR_OPENCL_CACHE");
  if (mode != nullptr && std::string_view(mode) == "off") return "";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/qlinear/opencl";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/qlinear/opencl";
  return "";
}

// clCreateBuffer: the "pointer" is the cl_mem handle.
class Context::BufferAllocator final : public qlinear::Allocator {
 public:
  BufferAllocator(cl_context context, int index) : context_(context), index_(index) {}
  Location location() const override { return Location::opencl(index_); }
  Result<void*> allocate(std::size_t bytes) const override {
    cl_int error = CL_SUCCESS;
    cl_mem buffer =
        clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes == 0 ? 64 : bytes, nullptr, &error);
    if (error != CL_SUCCESS) {
      return make_error(ErrorCode::kIo, "opencl:{}: clCreateBuffer of {} bytes: {}", index_, bytes,
                        error_name(error));
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

Context::Context(Device device, cl_device_id id, ContextHandle context, QueueHandle queue,
                 DeviceProperties properties)
    : device_(std::move(device)),
      id_(id),
      context_(std::move(context)),
      queue_(std::move(queue)),
      properties_(std::move(properties)),
      allocator_(std::make_unique<BufferAllocator>(context_.get(), device_.index)) {}

Context::~Context() {
  programs_.clear();
  if (queue_) (void)clFinish(queue_.get());
}

const qlinear::Allocator& Context::allocator() const { return *allocator_; }
const qlinear::Allocator& Context::staging_allocator() const { return host_allocator(); }

Status Context::upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) {
  if (bytes == 0) return Status::ok_status();
  return check(clEnqueueWriteBuffer(queue_.get(), mem_of(dst), CL_TRUE, dst_offset, bytes, src, 0,
                                    nullptr, nullptr),
               "clEnqueueWriteBuffer", fmt::format("{} bytes at {}", bytes, dst_offset));
}

Status Context::download(void* dst, const void* src, std::size_t src_offset, std::size_t bytes) {
  if (bytes == 0) return Status::ok_status();
  return check(clEnqueueReadBuffer(queue_.get(), mem_of(src), CL_TRUE, src_offset, bytes, dst, 0,
                                   nullptr, nullptr),
               "clEnqueueReadBuffer", fmt::format("{} bytes at {}", bytes, src_offset));
}

Status Context::fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) {
  if (bytes / 4 == 0) return Status::ok_status();
  QL_RETURN_IF_ERROR(check(clEnqueueFillBuffer(queue_.get(), mem_of(dst), &pattern, sizeof(pattern),
                                               dst_offset, bytes / 4 * 4, 0, nullptr, nullptr),
                           "clEnqueueFillBuffer"));
  return check(clFinish(queue_.get()), "clFinish");
}

Status Context::synchronize(void* stream) {
  return check(clFinish(stream != nullptr ? static_cast<cl_command_queue>(stream) : queue_.get()),
               "clFinish");
}

bool Context::has_extension(std::string_view name) const {
  return has_word(properties_.extensions, name);
}

Result<cl_program> Context::program(std::string_view file, std::string_view options) {
  const std::string_view common = embedded_source("common.cl");
  const std::string_view body = embedded_source(file);
  if (body.empty()) {
    return make_error(ErrorCode::kInternal, "opencl: no embedded kernel source \"{}\"", file);
  }
  std::string all_options = "-cl-std=CL1.2";
  if (properties_.correctly_rounded_divide) {
    all_options += " -cl-fp32-correctly-rounded-divide-sqrt";
  }
  if (!options.empty()) all_options += fmt::format(" {}", options);
  std::string source;
  source.reserve(common.size() + body.size() + 64);
  source.append(common).append("\n#line 1 \"").append(file).append("\"\n").append(body);
  // The key: everything that decides the binary.
  const std::string key =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", file, all_options, device_.name, device_.vendor,
                  properties_.driver_version, properties_.platform_version,
                  fnv1a(source) ^ (source.size() * 0x9E3779B97F4A7C15ull));
  const std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = programs_.find(key); it != programs_.end()) {
    ++stats_.from_memory;
    return it->second.get();
  }
  const std::string folder = cache_folder();
  const std::filesystem::path path =
      folder.empty() ? std::filesystem::path()
                     : std::filesystem::path(folder) / fmt::format("{:016x}.bin", fnv1a(key));
  cl_int error = CL_SUCCESS;
  if (!folder.empty()) {
    const std::string binary = read_cached(path, key);
    if (!binary.empty()) {
      const auto* data = reinterpret_cast<const unsigned char*>(binary.data());
      const std::size_t size = binary.size();
      cl_int binary_status = CL_SUCCESS;
      ProgramHandle program(
          clCreateProgramWithBinary(context_.get(), 1, &id_, &size, &data, &binary_status, &error));
      if (error == CL_SUCCESS && binary_status == CL_SUCCESS &&
          clBuildProgram(program.get(), 1, &id_, all_options.c_str(), nullptr, nullptr) ==
              CL_SUCCESS) {
        ++stats_.loaded_from_disk;
        cl_program handle = program.get();
        programs_.emplace(key, std::move(program));
        return handle;
      }
      log_warn("opencl: cached program {} could not be loaded; compiling {} again", path.string(),
               file);
    }
  }
  const char* text = source.c_str();
  const std::size_t length = source.size();
  ProgramHandle program(clCreateProgramWithSource(context_.get(), 1, &text, &length, &error));
  QL_RETURN_IF_ERROR(check(error, "clCreateProgramWithSource", file));
  error = clBuildProgram(program.get(), 1, &id_, all_options.c_str(), nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return make_error(ErrorCode::kInternal, "clBuildProgram ({} with \"{}\" on {}): {}\n{}", file,
                      all_options, device_.name, error_name(error),
                      program_log(program.get(), id_));
  }
  ++stats_.built_from_source;
  if (!folder.empty()) {
    const std::string binary = program_binary(program.get());
    if (!binary.empty()) write_cached(path, key, binary);
  }
  cl_program handle = program.get();
  programs_.emplace(key, std::move(program));
  return handle;
}

Result<KernelHandle> Context::kernel(std::string_view file, std::string_view name,
                                     std::string_view options) {
  QL_ASSIGN_OR_RETURN(cl_program program, program(file, options));
  cl_int error = CL_SUCCESS;
  const std::string kernel_name(name);
  KernelHandle kernel(clCreateKernel(program, kernel_name.c_str(), &error));
  QL_RETURN_IF_ERROR(check(error, "clCreateKernel", fmt::format("{} of {}", name, file)));
  return kernel;
}

CacheStats Context::cache_stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Context::clear_memory_cache() {
  const std::lock_guard<std::mutex> lock(mutex_);
  programs_.clear();
}

Result<BufferHandle> Context::buffer(std::size_t bytes, std::string_view what) {
  cl_int error = CL_SUCCESS;
  BufferHandle buffer(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE,
                                     std::max<std::size_t>(bytes, 64), nullptr, &error));
  QL_RETURN_IF_ERROR(check(error, "clCreateBuffer", fmt::format("{}, {} bytes", what, bytes)));
  return buffer;
}

Result<BufferHandle> Context::upload_buffer(const void* data, std::size_t bytes,
                                            std::string_view what) {
  QL_ASSIGN_OR_RETURN(BufferHandle b, buffer(bytes, what));
  if (bytes > 0) {
    QL_RETURN_IF_ERROR(check(
        clEnqueueWriteBuffer(queue_.get(), b.get(), CL_TRUE, 0, bytes, data, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer", what));
  }
  return b;
}

Result<Context*> context_of(DeviceContext& device) {
  auto* context = dynamic_cast<Context*>(&device);
  if (context == nullptr) {
    return make_error(ErrorCode::kInvalidArgument,
                      "device \"{}\" has no OpenCL context (an OpenCL kernel was given another "
                      "device's context)",
                      device.device().name);
  }
  return context;
}

Status launch(cl_command_queue queue, cl_kernel kernel, std::string_view what,
              std::initializer_list<std::size_t> global, std::initializer_list<std::size_t> local,
              std::initializer_list<Arg> args) {
  cl_uint index = 0;
  for (const Arg& a : args) {
    const cl_int error = clSetKernelArg(kernel, index, a.size, a.value);
    if (error != CL_SUCCESS) {
      return make_error(ErrorCode::kInternal, "clSetKernelArg ({} argument {}): {}", what, index,
                        error_name(error));
    }
    ++index;
  }
  std::size_t g[3] = {1, 1, 1};
  std::size_t l[3] = {1, 1, 1};
  const cl_uint dims = static_cast<cl_uint>(global.size());
  std::size_t i = 0;
  for (std::size_t v : global) g[i++] = v;
  bool runtime_local = local.size() == 1 && *local.begin() == 0;
  i = 0;
  for (std::size_t v : local) l[i++] = v;
  for (cl_uint d = 0; d < dims; ++d) {
    if (g[d] == 0) return Status::ok_status();  // nothing to do
    if (!runtime_local) g[d] = (g[d] + l[d] - 1) / l[d] * l[d];
  }
  return check(clEnqueueNDRangeKernel(queue, kernel, dims, nullptr, g, runtime_local ? nullptr : l,
                                      0, nullptr, nullptr),
               "clEnqueueNDRangeKernel", what);
}

}  // namespace opencl

Result<Device> detect_opencl_device(int index, bool intel_gpu_only) {
  QL_ASSIGN_OR_RETURN(std::vector<cl_device_id> devices, opencl::all_devices());
  if (intel_gpu_only) {
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Device d = opencl::describe(devices[i], static_cast<int>(i));
      if (d.intel_gpu) return d;
      seen.push_back(d.name);
    }
    return make_error(ErrorCode::kUnsupported,
                      "device \"xpu\": no Intel GPU among the {} OpenCL device{} ({}); install "
                      "intel-opencl-icd on a machine with one, use --device opencl:N for another "
                      "device, or --target xpu to simulate",
                      devices.size(), devices.size() == 1 ? "" : "s", fmt::join(seen, ", "));
  }
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "device \"opencl:{}\": this machine has {} OpenCL device{} (opencl:0..{})",
                      index, devices.size(), devices.size() == 1 ? "" : "s", devices.size() - 1);
  }
  return opencl::describe(devices[static_cast<std::size_t>(index)], index);
}

Result<DeviceContext*> opencl_device_context(const Device& device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<opencl::Context>>* contexts =
      new std::map<int, std::unique_ptr<opencl::Context>>();  // kept to exit: queues outlive users
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts->find(device.index);
  if (it == contexts->end()) {
    QL_ASSIGN_OR_RETURN(std::vector<cl_device_id> devices, opencl::all_devices());
    if (device.index < 0 || static_cast<std::size_t>(device.index) >= devices.size()) {
      return make_error(ErrorCode::kInvalidArgument, "opencl:{} is not a device of this machine",
                        device.index);
    }
    cl_device_id id = devices[static_cast<std::size_t>(device.index)];
    cl_int error = CL_SUCCESS;
    opencl::ContextHandle context(clCreateContext(nullptr, 1, &id, nullptr, nullptr, &error));
    QL_RETURN_IF_ERROR(opencl::check(error, "clCreateContext", device.name));
    opencl::QueueHandle queue(clCreateCommandQueue(context.get(), id, 0, &error));
    QL_RETURN_IF_ERROR(opencl::check(error, "clCreateCommandQueue", device.name));
    it = contexts
             ->emplace(device.index, std::make_unique<opencl::Context>(
                                         opencl::describe(id, device.index), id, std::move(context),
                                         std::move(queue), opencl::properties_of(id)))
             .first;
  }
  return static_cast<DeviceContext*>(it->second.get());
}

}  // namespace qlinear
