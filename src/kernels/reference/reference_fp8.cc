// reference.fp8.scalar | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block scales;
//   W8A16, and W8A8 with dynamic per-token, dynamic per-tensor, static per-tensor or dynamic
//   per-group activations (activation_quant.h); a f32/bf16/f16, o f32/bf16/f16
// after prepare: a copy of the canonical Fp8Weights | limits: host memory only, no GPU device
//   (M*N*K scalar steps: an oracle)
// tested on: AMD EPYC x86-64 (2 cores), ASan+UBSan
//
// The oracle (docs/reference/formats.md §4.4). W8A16: y = x * (W_q ⊙ S_w)^T + bias. W8A8:
// y[m,n] = Σ_k (a_q[m,k] s_a(m,k)) (w_q[n,k] s_w(n,k)) + bias, which is Σ_j s_a s_w Σ_{k∈j} a_q w_q
// (the per-K-block rescaled sum) term by term. Every product code*scale is exact in double (an
// e4m3 code has 4 significant bits, a float scale 24), so only the accumulation rounds.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/kernel.h"
#include "kernels/reference/reference_common.h"
#include "qlinear/dtype.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.fp8.scalar";

class PreparedFp8Reference final : public PreparedLinear {
 public:
  PreparedFp8Reference(const LinearProblem& problem, Fp8Weights w)
      : PreparedLinear(problem, Location::host()),
        w_(std::move(w)),
        act_(w8a8_act_quant(problem)),
        act_group_k_(w8a8_act_group_k(problem)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    rows_to_f32(x, 0, M, b.xf);
    // Activations as the GEMM sees them: x itself (W8A16) or code * s_a (W8A8), in double.
    for (int64_t i = 0; i < M * K; ++i) b.a[i] = b.xf[i];
    if (w8a8()) {
      QL_RETURN_IF_ERROR(quantize_activations_into(b.xf, M, K, act_, w_.input_scale, act_group_k_,
                                                   b.codes, b.scales));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          b.a[m * K + k] =
              static_cast<double>(f8e4m3_to_f32(b.codes[m * K + k])) *
              static_cast<double>(activation_scale_at(act_, b.scales, K, act_group_k_, m, k));
        }
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        b.row[k] = static_cast<double>(f8e4m3_to_f32(w_.qweight[n * K + k])) *
                   static_cast<double>(w_.weight_scale(n, k));
      }
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += b.a[m * K + k] * b.row[k];
        store_element(static_cast<float>(acc + bias), y, m, n);
      }
    }
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf;
    double* a;
    double* row;
    uint8_t* codes;
    float* scales;
  };
  bool w8a8() const { return problem().fp8_mode == Fp8Mode::kW8A8; }
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b{};
    b.xf = c.take<float>(M * w_.K);
    b.a = c.take<double>(M * w_.K);
    b.row = c.take<double>(w_.K);
    if (w8a8()) {
      b.codes = c.take<uint8_t>(M * w_.K);
      b.scales = c.take<float>(activation_scale_count(act_, M, w_.K, act_group_k_));
    }
    return b;
  }

  Fp8Weights w_;
  ActQuant act_;
  int64_t act_group_k_;
};

class Fp8Reference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_reference_device(device));
    return require_fp8_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    const ActQuant act = w8a8_act_quant(problem);
    if (problem.fp8_mode == Fp8Mode::kW8A8 && act == ActQuant::kStaticTensor &&
        !(w->input_scale > 0.0f && std::isfinite(w->input_scale))) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: layer \"{}\": static activation quantization needs input_scale > 0, "
                        "got {}",
                        kName, weights.name, w->input_scale);
    }
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedFp8Reference>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_reference_fp8() {
  static const Fp8Reference kernel;
  return kernel;
}

}  // namespace qlinear
