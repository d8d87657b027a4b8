// reference.dense.scalar | scheme: unquantized weights in f32, bf16 or f16 (a f32/bf16/f16,
//   o f32/bf16/f16)
// after prepare: a copy of the canonical DenseWeights | limits: host memory only, no GPU device
//   (M*N*K scalar steps: an oracle)
// tested on: AMD EPYC x86-64 (2 cores), ASan+UBSan
//
// The oracle: y = x * W^T + bias with every weight widened exactly to double and double sums.
#include <memory>
#include <vector>

#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/kernel.h"
#include "kernels/reference/reference_common.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.dense.scalar";

class PreparedDenseReference final : public PreparedLinear {
 public:
  PreparedDenseReference(const LinearProblem& problem, DenseWeights w)
      : PreparedLinear(problem, Location::host()), w_(std::move(w)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    const int64_t K = w_.K;
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    rows_to_f32(x, 0, M, b.xf);
    for (int64_t n = 0; n < w_.N; ++n) {
      for (int64_t k = 0; k < K; ++k) b.row[k] = static_cast<double>(w_.at(n, k));
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(b.xf[m * K + k]) * b.row[k];
        store_element(static_cast<float>(acc + bias), y, m, n);
      }
    }
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf;
    double* row;
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b{};
    b.xf = c.take<float>(M * w_.K);
    b.row = c.take<double>(w_.K);
    return b;
  }

  DenseWeights w_;
};

class DenseReference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_reference_device(device));
    return require_dense_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedDenseReference>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_reference_dense() {
  static const DenseReference kernel;
  return kernel;
}

}  // namespace qlinear
