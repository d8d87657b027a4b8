// reference.int.scalar | scheme: int weight-only w2/w4/w8 (a f32/bf16/f16, o f32/bf16/f16), any
//   group size, zero points or symmetric, act-order (g_idx); with --int8-activations, the int8
//   activation contract of activation_quant.h (the oracle of the W4A8 / W8A8 int kernels)
// after prepare: a copy of the canonical IntWeights | limits: host memory only, no GPU device
//   (M*N*K scalar steps: an oracle)
// tested on: AMD EPYC x86-64 (2 cores), ASan+UBSan
//
// The oracle: W[n][k] = (code - zero) * scale is formed in double straight from the canonical
// accessors, one output column at a time, and y = x * W^T + bias is accumulated in double. With
// int8 activations x is first replaced by q * s (quantize_int8_activations, groups as the
// weights').
#include <memory>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/kernel.h"
#include "kernels/reference/reference_common.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "reference.int.scalar";

class PreparedIntReference final : public PreparedLinear {
 public:
  PreparedIntReference(const LinearProblem& problem, IntWeights w)
      : PreparedLinear(problem, Location::host()),
        w_(std::move(w)),
        group_of_k_(int8_activation_groups(w_)) {}

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
    for (int64_t i = 0; i < M * K; ++i) b.xd[i] = b.xf[i];
    if (problem().int8_activations) {
      quantize_int8_activations_into(b.xf, M, K, group_of_k_.data(), w_.num_groups, b.codes,
                                     b.scales, b.absmax);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          b.xd[m * K + k] = static_cast<double>(b.codes[m * K + k]) *
                            static_cast<double>(b.scales[m * w_.num_groups + group_of_k_[k]]);
        }
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const int64_t g = w_.group_of(k);
        b.column[k] = (static_cast<double>(w_.code(k, n)) - static_cast<double>(w_.zero(g, n))) *
                      static_cast<double>(w_.scales[g * N + n]);
      }
      const double bias = w_.bias.empty() ? 0.0 : static_cast<double>(w_.bias[n]);
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += b.xd[m * K + k] * b.column[k];
        store_element(static_cast<float>(acc + bias), y, m, n);
      }
    }
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf;
    double* xd;
    double* column;
    int8_t* codes;
    float* scales;
    float* absmax;
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b{};
    b.xf = c.take<float>(M * w_.K);
    b.xd = c.take<double>(M * w_.K);
    b.column = c.take<double>(w_.K);
    if (problem().int8_activations) {
      b.codes = c.take<int8_t>(M * w_.K);
      b.scales = c.take<float>(M * w_.num_groups);
      b.absmax = c.take<float>(w_.num_groups);
    }
    return b;
  }

  IntWeights w_;
  std::vector<int32_t> group_of_k_;
};

class IntReference final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kReference; }
  Platform platform() const override { return Platform::kCpu; }

  // Runs on the host for every CPU (real or simulated); both activation modes.
  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_reference_device(device));
    return require_int_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedIntReference>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_reference_int() {
  static const IntReference kernel;
  return kernel;
}

}  // namespace qlinear
