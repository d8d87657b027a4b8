// cpu.fp8.blas.sgemm | scheme: fp8 e4m3fn weights, per-tensor / per-channel / block scales;
//   W8A16, and W8A8 with dynamic per-token, dynamic per-tensor, static per-tensor or dynamic
//   per-group activations
// after prepare: a copy of the canonical Fp8Weights | limits: CPU only; per run, each tile of
//   kBlasTileN output rows of W is dequantized to f32 [tile, K] and multiplied by cblas_sgemm
//   (OpenBLAS, its own threads; Stream::threads is not applied)
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

#include "kernels/cpu/dequant_tile.h"
#include "kernels/kernel.h"
#include "kernels/reference/activation_quant.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "cpu.fp8.blas.sgemm";

class PreparedFp8Blas final : public PreparedLinear {
 public:
  PreparedFp8Blas(Fp8Weights w, Fp8Mode mode, ActQuant act, int64_t act_group_k)
      : w_(std::move(w)), mode_(mode), act_(act), act_group_k_(act_group_k) {}

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));
    if (M == 0) return Status::ok_status();
    if (mode_ == Fp8Mode::kW8A8) {
      QL_ASSIGN_OR_RETURN(
          QuantizedActivations q,
          quantize_activations(xf.data(), M, K, act_, w_.input_scale, act_group_k_));
      dequantize_activations(q, xf.data());
    }
    sgemm_by_column_tiles(
        xf.data(), M, K, N, TileOrder::kNMajor,
        [&](int64_t n0, int64_t count, float* scratch) {
          dequant_fp8_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y.data_as<float>());
    return Status::ok_status();
  }

 private:
  Fp8Weights w_;
  Fp8Mode mode_;
  ActQuant act_;
  int64_t act_group_k_;
};

class Fp8Blas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    if (Verdict cpu = check_cpu_device(device); !cpu.ok()) return cpu;
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
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedFp8Blas>(*w, problem.fp8_mode, act, w8a8_act_group_k(problem)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_fp8() {
  static const Fp8Blas kernel;
  return kernel;
}

}  // namespace qlinear
