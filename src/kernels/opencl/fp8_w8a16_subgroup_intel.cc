// opencl.fp8.w8a16.subgroup.intel | scheme: fp8 e4m3fn weights, per-tensor / per-channel /
//   block scales, W8A16 (a f32/bf16/f16, o f32/bf16/f16); the OpenCL default FP8 mode (W8A8 was
//   slower than W8A16 on Intel GPUs, vLLM #43645); Intel GPUs: 16-wide subgroups, block reads
// after prepare: codes packed [K/4, N] u32 (four rows of a column per word, lowest byte first),
//   so one block read gives each lane its column's next four codes; scales as the canonical form
//   holds them f32; fp8_w8a16_subgroup_intel.cl
// limits: K % 4, N % 16
// tested on: compiled offline with ocloc for tgllp (Xe-LP) and dg2-g10 (Xe-HPG) only; not run
//   (no Intel GPU here: `qlinear verify --device xpu` checks it on one)
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.fp8.w8a16.subgroup.intel";

#if defined(QLINEAR_WITH_OPENCL)
constexpr int kRows = 4;  // QL_ROWS of fp8_w8a16_subgroup_intel.cl

// [N, K] codes as [K/4, N] words: word (r, n) holds rows 4r..4r+3 of column n.
std::vector<uint32_t> pack_k4(const Fp8Weights& w) {
  std::vector<uint32_t> out(static_cast<std::size_t>(w.K / 4 * w.N));
  for (int64_t n = 0; n < w.N; ++n) {
    for (int64_t k = 0; k < w.K; ++k) {
      out[(k / 4) * w.N + n] |= static_cast<uint32_t>(w.qweight[n * w.K + k]) << (8 * (k % 4));
    }
  }
  return out;
}

class PreparedFp8Subgroup final : public opencl::PreparedOnDevice {
 public:
  PreparedFp8Subgroup(const LinearProblem& problem, opencl::Context& device)
      : PreparedOnDevice(problem, device) {}

  Status load(const Fp8Weights& w) {
    K_ = static_cast<cl_int>(w.K);
    N_ = static_cast<cl_int>(w.N);
    block_n_ = w.is_block() ? w.block_n : 0;
    block_k_ = w.is_block() ? w.block_k : 0;
    has_bias_ = w.bias.empty() ? 0 : 1;
    QL_ASSIGN_OR_RETURN(kernel_,
                        device().kernel("fp8_w8a16_subgroup_intel.cl", "fp8_w8a16_subgroup"));
    QL_RETURN_IF_ERROR(upload(pack_k4(w), "qweight", qweight_));
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
        {static_cast<std::size_t>(N_), static_cast<std::size_t>((M + kRows - 1) / kRows)}, {16, 1},
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

class Fp8W8A16SubgroupIntel final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_intel_subgroups(device, 16));
    QL_REQUIRE(require_fp8_problem(p));
    QL_REQUIRE(require_fp8_mode(p, Fp8Mode::kW8A16));
    return require_alignment(p, 4, 16);
  }
#if defined(QLINEAR_WITH_OPENCL)
  bool has_device_code() const override { return true; }
  Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                            const LinearProblem& problem,
                                                            DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
    auto prepared = std::make_unique<PreparedFp8Subgroup>(problem, *context);
    QL_RETURN_IF_ERROR(prepared->load(*w));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_fp8_w8a16_subgroup_intel() {
  static const Fp8W8A16SubgroupIntel kernel;
  return kernel;
}

}  // namespace qlinear
