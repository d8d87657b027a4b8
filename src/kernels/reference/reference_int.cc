// reference.int.scalar | scheme: int weight-only w2/w4/w8 (a f32/bf16/f16), any group size,
//   zero points or symmetric, act-order (g_idx); with --int8-activations, the int8 activation
//   contract of activation_quant.h (the oracle of the W4A8 / W8A8 int kernels)
// after prepare: a copy of the canonical IntWeights | limits: none (M*N*K scalar steps: an oracle)
// tested on: AMD EPYC x86-64 (2 cores), ASan+UBSan
//
// The oracle: W[n][k] = (code - zero) * scale is formed in double straight from the canonical
// accessors, one output column at a time, and y = x * W^T + bias is accumulated in double. With
// int8 activations x is first replaced by q * s (quantize_int8_activations, groups as the
// weights').
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/reference/activation_quant.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.int.scalar";

class PreparedIntReference final : public PreparedLinear {
 public:
  PreparedIntReference(IntWeights w, bool int8_activations)
      : w_(std::move(w)), int8_activations_(int8_activations) {}

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));
    float* out = y.data_as<float>();
    std::vector<double> xd(xf.begin(), xf.end());
    if (int8_activations_) {
      const std::vector<int32_t> group_of_k = int8_activation_groups(w_);
      const Int8Activations q =
          quantize_int8_activations(xf.data(), M, K, group_of_k, w_.num_groups);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          xd[m * K + k] = static_cast<double>(q.codes[m * K + k]) *
                          static_cast<double>(q.scales[m * q.groups + group_of_k[k]]);
        }
      }
    }
    std::vector<double> column(static_cast<std::size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const int64_t g = w_.group_of(k);
        column[k] = (static_cast<double>(w_.code(k, n)) - static_cast<double>(w_.zero(g, n))) *
                    static_cast<double>(w_.scales[g * N + n]);
      }
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += xd[m * K + k] * column[k];
        out[m * N + n] = static_cast<float>(acc + bias);
      }
    }
    return Status::ok_status();
  }

 private:
  IntWeights w_;
  bool int8_activations_;
};

class IntReference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  // Platform-agnostic: every device (real or simulated) is accepted, so `explain` always has a
  // fallback to show; the scalar loops run on the host. Both activation modes.
  Verdict check(const LinearProblem& p, const Device& /*device*/) const override {
    return check_int_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedIntReference>(*w, problem.int8_activations));
  }
};

}  // namespace

const LinearKernel& kernel_reference_int() {
  static const IntReference kernel;
  return kernel;
}

}  // namespace qlinear
