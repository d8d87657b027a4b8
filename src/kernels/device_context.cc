// device_context(): one context per real device, created on first use; the CPU's is trivial.
#include "kernels/device_context.h"

#include <fmt/format.h>

#include <cstring>

namespace qlinear {
namespace {

class CpuContext final : public DeviceContext {
 public:
  explicit CpuContext(Device device) : device_(std::move(device)) {}
  const Device& device() const override { return device_; }
  const Allocator& allocator() const override { return host_allocator(); }
  const Allocator& staging_allocator() const override { return host_allocator(); }
  Status upload(void* dst, std::size_t dst_offset, const void* src, std::size_t bytes) override {
    std::memcpy(static_cast<char*>(dst) + dst_offset, src, bytes);
    return Status::ok_status();
  }
  Status download(void* dst, const void* src, std::size_t src_offset, std::size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(src) + src_offset, bytes);
    return Status::ok_status();
  }
  Status fill(void* dst, std::size_t dst_offset, uint32_t pattern, std::size_t bytes) override {
    auto* words = reinterpret_cast<uint32_t*>(static_cast<char*>(dst) + dst_offset);
    for (std::size_t i = 0; i < bytes / 4; ++i) words[i] = pattern;
    return Status::ok_status();
  }
  void* default_stream() const override { return nullptr; }
  Status synchronize(void* /*stream*/) override { return Status::ok_status(); }

 private:
  Device device_;
};

}  // namespace

Result<std::unique_ptr<RecordedWork>> DeviceContext::record(
    const std::function<Status()>& /*body*/) {
  return make_error(ErrorCode::kUnsupported, "device \"{}\" cannot record queued work for replay",
                    device().name);
}

Location device_location(const Device& device) {
  switch (device.platform) {
    case Platform::kCpu:
      return Location::host();
    case Platform::kCuda:
      return Location::cuda(device.index);
    case Platform::kOpenCl:
      return Location::opencl(device.index);
  }
  return Location::host();
}

Result<DeviceContext*> device_context(const Device& device) {
  if (device.simulated) {
    return make_error(ErrorCode::kInvalidArgument,
                      "device \"{}\" is simulated: layers can be explained for it, not run",
                      device.name);
  }
  switch (device.platform) {
    case Platform::kCpu: {
      // The CPU context describes the detected CPU; a caller's Device with other features
      // (tests forcing a narrower ISA) still runs on host memory.
      static CpuContext context(device);
      return static_cast<DeviceContext*>(&context);
    }
    case Platform::kCuda:
      return cuda_device_context(device);
    case Platform::kOpenCl:
      return opencl_device_context(device);
  }
  return make_error(ErrorCode::kInternal, "device_context: unknown platform");
}

}  // namespace qlinear
