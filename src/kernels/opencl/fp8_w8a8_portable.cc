// opencl.fp8.w8a8.portable | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block
//   scales, W8A8 with dynamic per-token, dynamic per-tensor, static per-tensor or dynamic
//   per-group activations (a f32/bf16/f16, o f32/bf16/f16); OpenCL C 1.2 with no extension
// after prepare: as opencl.fp8.w8a16.portable. Each run quantizes x on the device into the
//   workspace (codes [M, K] u8 + scales) by the contract of activation_quant.h, bit for bit, and
//   multiplies codes * scales (fp8_w8a8_portable.cl)
// limits: none on K, N or M; any block shape
// tested on: PoCL 3.1 (CPU device, AMD EPYC) against reference.fp8.scalar in the kernel grid
#include <fmt/format.h>

#include <cmath>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.fp8.w8a8.portable";

#if defined(QLINEAR_WITH_OPENCL)
constexpr int kRows = 4;  // QL_ROWS of fp8_w8a8_portable.cl
constexpr const char* kFile = "fp8_w8a8_portable.cl";

class PreparedFp8W8A8 final : public opencl::PreparedOnDevice {
 public:
  PreparedFp8W8A8(const LinearProblem& problem, opencl::Context& device)
      : PreparedOnDevice(problem, device) {}

  Status load(const Fp8Weights& w, const LinearProblem& problem) {
    K_ = static_cast<cl_int>(w.K);
    N_ = static_cast<cl_int>(w.N);
    block_n_ = w.is_block() ? w.block_n : 0;
    block_k_ = w.is_block() ? w.block_k : 0;
    has_bias_ = w.bias.empty() ? 0 : 1;
    QL_RETURN_IF_ERROR(quantizer_.load(device(), w8a8_act_quant(problem), w8a8_act_group_k(problem),
                                       w.input_scale, w.K));
    QL_ASSIGN_OR_RETURN(gemm_, device().kernel(kFile, "fp8_w8a8"));
    QL_RETURN_IF_ERROR(upload(opencl::fp8_k_major(w), "qweight", qweight_));
    QL_RETURN_IF_ERROR(upload(w.scale, "scales", scales_));
    return upload(w.bias, "bias", bias_);
  }

  std::size_t workspace_bytes(int64_t m) const override {
    opencl::WorkspaceOffsets sizing;
    (void)quantizer_.carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    opencl::WorkspaceOffsets carver(ctx.workspace);
    const opencl::ActivationQuantizer::Regions r = quantizer_.carve(carver, x.rows());
    if (carver.overflowed()) return workspace_overflow(kName);
    const opencl::ClView yv = opencl::cl_view(y);
    const cl_int M = static_cast<cl_int>(x.rows());
    const cl_mem q = qweight_.get(), s = scales_.get(), b = bias_.get(), w = carver.buffer();
    const cl_int act_kind = quantizer_.kind_code(), group_k = quantizer_.group_k();
    cl_command_queue queue = opencl::queue_of(ctx, device());
    using opencl::arg;
    const std::lock_guard<std::mutex> lock(launch_mutex());
    QL_RETURN_IF_ERROR(quantizer_.run(queue, opencl::cl_view(x), w, r, M));
    return opencl::launch(
        queue, gemm_.get(), kName,
        {static_cast<std::size_t>(N_), static_cast<std::size_t>((M + kRows - 1) / kRows)}, {0},
        {arg(w), arg(r.codes), arg(r.scales), arg(q), arg(s), arg(b), arg(yv.mem), arg(yv.offset),
         arg(yv.ld), arg(yv.dtype), arg(M), arg(K_), arg(N_), arg(block_n_), arg(block_k_),
         arg(has_bias_), arg(act_kind), arg(group_k)});
  }

 private:
  cl_int K_ = 0, N_ = 0, block_n_ = 0, block_k_ = 0, has_bias_ = 0;
  opencl::ActivationQuantizer quantizer_;
  opencl::KernelHandle gemm_;
  opencl::BufferHandle qweight_, scales_, bias_;
};
#endif

class Fp8W8A8Portable final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& /*device*/) const override {
    QL_REQUIRE(require_fp8_problem(p));
    return require_fp8_mode(p, Fp8Mode::kW8A8);
  }
#if defined(QLINEAR_WITH_OPENCL)
  bool has_device_code() const override { return true; }
  Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                            const LinearProblem& problem,
                                                            DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    if (w8a8_act_quant(problem) == ActQuant::kStaticTensor &&
        !(w->input_scale > 0.0f && std::isfinite(w->input_scale))) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: layer \"{}\": static activation quantization needs input_scale > 0, "
                        "got {}",
                        kName, weights.name, w->input_scale);
    }
    QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
    auto prepared = std::make_unique<PreparedFp8W8A8>(problem, *context);
    QL_RETURN_IF_ERROR(prepared->load(*w, problem));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a8_portable() {
  static const Fp8W8A8Portable kernel;
  return kernel;
}

}  // namespace qlinear
