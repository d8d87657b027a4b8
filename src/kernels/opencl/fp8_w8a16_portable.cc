// opencl.fp8.w8a16.portable | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block
//   scales, W8A16 (a f32/bf16/f16, o f32/bf16/f16); OpenCL C 1.2 with no extension
// after prepare: codes [K, N] u8 (transposed so neighbouring work-items read neighbouring bytes),
//   scales as the canonical form holds them ([N], or [N blocks, K blocks]) f32, bias [N] f32
//   (fp8_w8a16_portable.cl)
// limits: none on K, N or M; any block shape
// tested on: PoCL 3.1 (CPU device, AMD EPYC) against reference.fp8.scalar in the kernel grid
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.fp8.w8a16.portable";

#if defined(QLINEAR_WITH_OPENCL)
constexpr int kRows = 4;  // QL_ROWS of fp8_w8a16_portable.cl

class PreparedFp8W8A16 final : public opencl::PreparedOnDevice {
 public:
  PreparedFp8W8A16(const LinearProblem& problem, opencl::Context& device)
      : PreparedOnDevice(problem, device) {}

  Status load(const Fp8Weights& w) {
    K_ = static_cast<cl_int>(w.K);
    N_ = static_cast<cl_int>(w.N);
    block_n_ = w.is_block() ? w.block_n : 0;
    block_k_ = w.is_block() ? w.block_k : 0;
    has_bias_ = w.bias.empty() ? 0 : 1;
    QL_ASSIGN_OR_RETURN(kernel_, device().kernel("fp8_w8a16_portable.cl", "fp8_w8a16"));
    QL_RETURN_IF_ERROR(upload(opencl::fp8_k_major(w), "qweight", qweight_));
    QL_RETURN_IF_ERROR(upload(w.scale, "scales", scales_));
    return upload(w.bias, "bias", bias_);
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const opencl::ClView xv = opencl::cl_view(x);
    const opencl::ClView yv = opencl::cl_view(y);
    const cl_int M = static_cast<cl_int>(x.rows());
    const cl_mem q = qweight_.get(), s = scales_.get(), b = bias_.get();
    using opencl::arg;
    const std::lock_guard<std::mutex> lock(launch_mutex());
    return opencl::launch(
        opencl::queue_of(ctx, device()), kernel_.get(), kName,
        {static_cast<std::size_t>(N_), static_cast<std::size_t>((M + kRows - 1) / kRows)}, {0},
        {arg(xv.mem), arg(xv.offset), arg(xv.ld), arg(xv.dtype), arg(q), arg(s), arg(b),
         arg(yv.mem), arg(yv.offset), arg(yv.ld), arg(yv.dtype), arg(M), arg(K_), arg(N_),
         arg(block_n_), arg(block_k_), arg(has_bias_)});
  }

 private:
  cl_int K_ = 0, N_ = 0, block_n_ = 0, block_k_ = 0, has_bias_ = 0;
  opencl::KernelHandle kernel_;
  opencl::BufferHandle qweight_, scales_, bias_;
};
#endif

class Fp8W8A16Portable final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& /*device*/) const override {
    QL_REQUIRE(require_fp8_problem(p));
    return require_fp8_mode(p, Fp8Mode::kW8A16);
  }
#if defined(QLINEAR_WITH_OPENCL)
  bool has_device_code() const override { return true; }
  Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                            const LinearProblem& problem,
                                                            DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
    auto prepared = std::make_unique<PreparedFp8W8A16>(problem, *context);
    QL_RETURN_IF_ERROR(prepared->load(*w));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a16_portable() {
  static const Fp8W8A16Portable kernel;
  return kernel;
}

}  // namespace qlinear
