// opencl.blas.clblast — the portable OpenCL path for any OpenCL device: prepare() dequantizes
// any canonical weight to f16 (f32 when the device lacks cl_khr_fp16) once, and run() is one
// CLBlast GEMM plus a bias kernel. FP8 W8A8 is run by quantizing activations to e4m3 with the
// checkpoint's activation scheme, then the same GEMM and a scale epilogue, so its numerics match
// the checkpoint. Limits: none beyond an OpenCL device; slow and memory hungry.
// Tested on: not yet (the OpenCL backend is not compiled in this build).
#include "kernels/opencl/opencl_kernel.h"

namespace qlinear {
namespace {

class BlasClBlast final : public OpenClKernel {
 public:
  std::string_view name() const override { return "opencl.blas.clblast"; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& /*problem*/, const Device& /*device*/) const override {
    return Verdict::accept();
  }
};

}  // namespace

const LinearKernel& kernel_opencl_blas_clblast() {
  static const BlasClBlast kernel;
  return kernel;
}

}  // namespace qlinear
