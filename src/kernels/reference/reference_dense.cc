// reference.dense.scalar | scheme: unquantized weights in f32, bf16 or f16 (a f32/bf16/f16)
// after prepare: a copy of the canonical DenseWeights | limits: none (M*N*K scalar steps: an
// oracle) tested on: AMD EPYC x86-64 (2 cores), ASan+UBSan
//
// The oracle: y = x * W^T + bias with every weight widened exactly to double and double sums.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.dense.scalar";

class PreparedDenseReference final : public PreparedLinear {
 public:
  explicit PreparedDenseReference(DenseWeights w) : w_(std::move(w)) {}

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));
    float* out = y.data_as<float>();
    std::vector<double> row(static_cast<std::size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) row[k] = static_cast<double>(w_.at(n, k));
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xf[m * K + k]) * row[k];
        out[m * N + n] = static_cast<float>(acc + bias);
      }
    }
    return Status::ok_status();
  }

 private:
  DenseWeights w_;
};

class DenseReference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  // Platform-agnostic: every device (real or simulated) is accepted; the loops run on the host.
  Verdict check(const LinearProblem& p, const Device& /*device*/) const override {
    return check_dense_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& /*problem*/,
                                                  const Device& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedDenseReference>(*w));
  }
};

}  // namespace

const LinearKernel& kernel_reference_dense() {
  static const DenseReference kernel;
  return kernel;
}

}  // namespace qlinear
