// The device functions of the optional backends in a build without them: each says which backend
// is missing and how to get it. With QLINEAR_WITH_CUDA / QLINEAR_WITH_OPENCL the real ones come
// from kernels/cuda/runtime/ and kernels/opencl/runtime/.
#include <fmt/format.h>

#include "kernels/device_context.h"

namespace qlinear {

#if !defined(QLINEAR_WITH_CUDA)
Result<Device> detect_cuda_device(int index) {
  return make_error(ErrorCode::kUnsupported,
                    "device \"cuda:{}\": CUDA backend not compiled into this qlinear (build with "
                    "the cuda preset); use --target cuda:sm90 to simulate",
                    index);
}

Result<DeviceContext*> cuda_device_context(const Device& device) {
  return make_error(ErrorCode::kUnsupported,
                    "device \"{}\": CUDA backend not compiled into this qlinear", device.name);
}
#endif

#if !defined(QLINEAR_WITH_OPENCL)
Result<Device> detect_opencl_device(int index, bool intel_gpu_only) {
  return make_error(ErrorCode::kUnsupported,
                    "device \"{}\": OpenCL backend not compiled into this qlinear (build with the "
                    "opencl preset); use --target opencl:intel-gpu to simulate",
                    intel_gpu_only ? std::string("xpu") : fmt::format("opencl:{}", index));
}

Result<DeviceContext*> opencl_device_context(const Device& device) {
  return make_error(ErrorCode::kUnsupported,
                    "device \"{}\": OpenCL backend not compiled into this qlinear", device.name);
}
#endif

}  // namespace qlinear
