// opencl.fp8.w8a8.dpas.intel | scheme: fp8 e4m3fn weights with per-tensor or per-channel scales,
//   W8A8 with dynamic per-token, dynamic per-tensor or static per-tensor activations (a
//   f32/bf16/f16, o f32/bf16/f16); Intel GPUs with XMX (cl_intel_subgroup_matrix_multiply_
//   accumulate, 8-wide subgroups, fp16)
// after prepare: e4m3 code pairs tiled [N/8][K/2][8] u16 for the B operand's block reads, weight
//   scales [N] f32. Each run quantizes x with the portable quantizer (fp8_w8a8_portable.cl) and
//   multiplies codes as f16 (exact) on the DPAS units, s_a * s_w in the epilogue
//   (fp8_w8a8_dpas_intel.cl)
// limits: K % 16, N % 8; block weights and per-group activations go to opencl.fp8.w8a8.portable
// tested on: compiled offline with ocloc 22.43 for dg2-g10 (Xe-HPG, DPAS) by
//   scripts/check_ocloc.sh (that IGC declares the built-in only under the extension's macro and
//   never defines it, so the host defines it when the device lists the extension); never run (no
//   Intel GPU here: `qlinear verify --device xpu` and the kernel grid check it on one)
#include <fmt/format.h>

#include <cmath>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.fp8.w8a8.dpas.intel";

#if defined(QLINEAR_WITH_OPENCL)
// [N, K] codes as tiles [N/8][K/2][8] of u16 pairs (rows 2p, 2p+1 of a column, lower byte first).
std::vector<uint16_t> tile_pairs(const Fp8Weights& w) {
  std::vector<uint16_t> out(static_cast<std::size_t>(w.N * w.K / 2));
  for (int64_t n = 0; n < w.N; ++n) {
    for (int64_t p = 0; p < w.K / 2; ++p) {
      const uint16_t lo = w.qweight[n * w.K + 2 * p];
      const uint16_t hi = w.qweight[n * w.K + 2 * p + 1];
      out[((n / 8) * (w.K / 2) + p) * 8 + n % 8] = static_cast<uint16_t>(lo | (hi << 8));
    }
  }
  return out;
}

class PreparedFp8Dpas final : public opencl::PreparedOnDevice {
 public:
  PreparedFp8Dpas(const LinearProblem& problem, opencl::Context& device)
      : PreparedOnDevice(problem, device) {}

  Status load(const Fp8Weights& w, const LinearProblem& problem) {
    K_ = static_cast<cl_int>(w.K);
    N_ = static_cast<cl_int>(w.N);
    has_bias_ = w.bias.empty() ? 0 : 1;
    QL_RETURN_IF_ERROR(quantizer_.load(device(), w8a8_act_quant(problem), w8a8_act_group_k(problem),
                                       w.input_scale, w.K));
    QL_ASSIGN_OR_RETURN(kernel_, device().kernel("fp8_w8a8_dpas_intel.cl", "fp8_w8a8_dpas",
                                                 "-Dcl_intel_subgroup_matrix_multiply_accumulate"));
    QL_RETURN_IF_ERROR(upload(tile_pairs(w), "qweight", qweight_));
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
    const cl_int per_token = quantizer_.kind_code() == 0 ? 1 : 0;
    cl_command_queue queue = opencl::queue_of(ctx, device());
    using opencl::arg;
    const std::lock_guard<std::mutex> lock(launch_mutex());
    QL_RETURN_IF_ERROR(quantizer_.run(queue, opencl::cl_view(x), w, r, M));
    // One 8-lane work-group per 8 x 8 tile of y.
    return opencl::launch(
        queue, kernel_.get(), kName,
        {static_cast<std::size_t>(N_), static_cast<std::size_t>((M + 7) / 8)}, {8, 1},
        {arg(w), arg(r.codes), arg(r.scales), arg(q), arg(s), arg(b), arg(yv.mem), arg(yv.offset),
         arg(yv.ld), arg(yv.dtype), arg(M), arg(K_), arg(N_), arg(has_bias_), arg(per_token)});
  }

 private:
  cl_int K_ = 0, N_ = 0, has_bias_ = 0;
  opencl::ActivationQuantizer quantizer_;
  opencl::KernelHandle kernel_;
  opencl::BufferHandle qweight_, scales_, bias_;
};
#endif

class Fp8W8A8DpasIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_dpas(device));
    QL_REQUIRE(require_fp8_problem(p));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A8));
    if (p.fp8_weight == Fp8WeightGranularity::kBlock) {
      return Verdict::reject(Reason::kFp8Granularity,
                             fmt::format("needs tensor or channel weight scales, problem has "
                                         "block {}x{}",
                                         p.block_n, p.block_k));
    }
    if (w8a8_act_quant(p) == ActQuant::kDynamicGroup) {
      return Verdict::reject(Reason::kActivationQuant,
                             "needs per-token or per-tensor activation scales, problem has "
                             "dyn-group");
    }
    return require_alignment(p, 16, 8);
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
    auto prepared = std::make_unique<PreparedFp8Dpas>(problem, *context);
    QL_RETURN_IF_ERROR(prepared->load(*w, problem));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a8_dpas_intel() {
  static const Fp8W8A8DpasIntel kernel;
  return kernel;
}

}  // namespace qlinear
