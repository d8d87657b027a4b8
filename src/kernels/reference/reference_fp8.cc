// reference.fp8.scalar | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block scales;
//   W8A16, and W8A8 with dynamic per-token, dynamic per-tensor, static per-tensor or dynamic
//   per-group activations (activation_quant.h)
// after prepare: a copy of the canonical Fp8Weights | limits: none (M*N*K scalar steps: an oracle)
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

#include "core/dtype.h"
#include "kernels/kernel.h"
#include "kernels/reference/activation_quant.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.fp8.scalar";

class PreparedFp8Reference final : public PreparedLinear {
 public:
  PreparedFp8Reference(Fp8Weights w, Fp8Mode mode, ActQuant act, int64_t act_group_k)
      : w_(std::move(w)), mode_(mode), act_(act), act_group_k_(act_group_k) {}

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));

    // Activations as the GEMM sees them: x itself (W8A16) or code * s_a (W8A8), in double.
    std::vector<double> a(xf.begin(), xf.end());
    if (mode_ == Fp8Mode::kW8A8) {
      QL_ASSIGN_OR_RETURN(
          QuantizedActivations q,
          quantize_activations(xf.data(), M, K, act_, w_.input_scale, act_group_k_));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          a[m * K + k] = static_cast<double>(f8e4m3_to_f32(q.codes[m * K + k])) *
                         static_cast<double>(q.scale(m, k));
        }
      }
    }

    float* out = y.data_as<float>();
    std::vector<double> row(static_cast<std::size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        row[k] = static_cast<double>(f8e4m3_to_f32(w_.qweight[n * K + k])) *
                 static_cast<double>(w_.weight_scale(n, k));
      }
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += a[m * K + k] * row[k];
        out[m * N + n] = static_cast<float>(acc + bias);
      }
    }
    return Status::ok_status();
  }

 private:
  Fp8Weights w_;
  Fp8Mode mode_;
  ActQuant act_;
  int64_t act_group_k_;
};

class Fp8Reference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  // Platform-agnostic: every device (real or simulated) is accepted; the loops run on the host.
  Verdict check(const LinearProblem& p, const Device& /*device*/) const override {
    return check_fp8_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    const ActQuant act = w8a8_act_quant(problem);
    if (problem.fp8_mode == Fp8Mode::kW8A8 && act == ActQuant::kStaticTensor &&
        !(w->input_scale > 0.0f && std::isfinite(w->input_scale))) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: layer \"{}\": static activation quantization needs input_scale > 0, "
                        "got {}",
                        kName, weights.name, w->input_scale);
    }
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedFp8Reference>(
        *w, problem.fp8_mode, act, w8a8_act_group_k(problem)));
  }
};

}  // namespace

const LinearKernel& kernel_reference_fp8() {
  static const Fp8Reference kernel;
  return kernel;
}

}  // namespace qlinear
