#include "kernels/cuda/cuda_kernel.h"

#include "core/status.h"

namespace qlinear {

bool cuda_backend_compiled() {
#if defined(QLINEAR_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

const BackendInfo& CudaKernel::backend() const {
  static const BackendInfo kInfo{Platform::kCuda, cuda_backend_compiled(), "CUDA",
                                 "QLINEAR_WITH_CUDA", "cuda"};
  return kInfo;
}

#if !defined(QLINEAR_WITH_CUDA)
namespace {
PreparedResult no_device_code(std::string_view kernel, const Canonical& weights) {
  return make_error(ErrorCode::kUnsupported,
                    "{}: layer \"{}\": built without QLINEAR_WITH_CUDA (build with the cuda "
                    "preset)",
                    kernel, weights.name);
}
}  // namespace

PreparedResult cuda_prepare_blas(std::string_view kernel, const Canonical& weights,
                                 const LinearProblem&, DeviceContext&) {
  return no_device_code(kernel, weights);
}
PreparedResult cuda_prepare_wo_mma(std::string_view kernel, const Canonical& weights,
                                   const LinearProblem&, DeviceContext&) {
  return no_device_code(kernel, weights);
}
PreparedResult cuda_prepare_int_gemv(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem&, DeviceContext&) {
  return no_device_code(kernel, weights);
}
PreparedResult cuda_prepare_fp8_w8a8(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem&, DeviceContext&) {
  return no_device_code(kernel, weights);
}
#endif

}  // namespace qlinear
