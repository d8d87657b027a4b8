// cpu.fp8.blas.sgemm | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block scales;
//   W8A16, and W8A8 with dynamic per-token, dynamic per-tensor, static per-tensor or dynamic
//   per-group activations
// after prepare: a copy of the canonical Fp8Weights | limits: CPU only; per run, each tile of
//   kBlasTileN output rows of W is dequantized to f32 [tile, K] and multiplied by cblas_sgemm
//   (OpenBLAS, its own threads; ExecContext::threads is not applied)
// tested on: AMD EPYC x86-64 (2 cores), OpenBLAS 0.3.21 pthread, ASan+UBSan
//
// W8A8 quantizes x with activation_quant.h (the same codes and scales as every other kernel)
// and multiplies the dequantized a_q*s_a: Σ_k (a_q s_a)(w_q s_w) is the per-K-block rescaled sum
// of formats.md §4.4 term by term, for every pairing of activation and weight granularity.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/dequant_tile.h"
#include "kernels/kernel.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "cpu.fp8.blas.sgemm";

class PreparedFp8Blas final : public PreparedLinear {
 public:
  PreparedFp8Blas(const LinearProblem& problem, Fp8Weights w)
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
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    rows_to_f32(x, 0, M, b.xf);
    if (w8a8()) {
      QL_RETURN_IF_ERROR(quantize_activations_into(b.xf, M, K, act_, w_.input_scale, act_group_k_,
                                                   b.codes, b.scales));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          b.xf[m * K + k] = f8e4m3_to_f32(b.codes[m * K + k]) *
                            activation_scale_at(act_, b.scales, K, act_group_k_, m, k);
        }
      }
    }
    sgemm_by_column_tiles(
        b.xf, M, K, w_.N, TileOrder::kNMajor,
        [&](int64_t n0, int64_t count, float* scratch) {
          dequant_fp8_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y, b.tile, b.ytmp);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;
    uint8_t* codes = nullptr;
    float* scales = nullptr;
    float* tile = nullptr;
    float* ytmp = nullptr;
  };
  bool w8a8() const { return problem().fp8_mode == Fp8Mode::kW8A8; }
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * w_.K);
    if (w8a8()) {
      b.codes = c.take<uint8_t>(M * w_.K);
      b.scales = c.take<float>(activation_scale_count(act_, M, w_.K, act_group_k_));
    }
    b.tile = c.take<float>(w_.K * kBlasTileN);
    if (problem().out_dtype != DType::kF32) b.ytmp = c.take<float>(M * kBlasTileN);
    return b;
  }

  Fp8Weights w_;
  ActQuant act_;
  int64_t act_group_k_;
};

class Fp8Blas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_platform(device, Platform::kCpu));
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
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedFp8Blas>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_fp8() {
  static const Fp8Blas kernel;
  return kernel;
}

}  // namespace qlinear
