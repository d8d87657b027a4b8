// cpu.int.blas.sgemm | scheme: int weight-only w2/w4/w8 (a f32/bf16/f16), any group size,
//   zero points or symmetric, act-order (g_idx); int8 activations (--int8-activations) as
//   dequantized q * s, the portable path of that mode on CPUs without avx512_vnni
// after prepare: a copy of the canonical IntWeights | limits: CPU only; per run, each tile of
//   kBlasTileN output columns is dequantized to f32 [K, tile] and multiplied by cblas_sgemm
//   (OpenBLAS, its own threads; ExecContext::threads is not applied)
// tested on: AMD EPYC x86-64 (2 cores), OpenBLAS 0.3.21 pthread, ASan+UBSan
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
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

constexpr std::string_view kName = "cpu.int.blas.sgemm";

class PreparedIntBlas final : public PreparedLinear {
 public:
  PreparedIntBlas(const LinearProblem& problem, IntWeights w)
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
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    rows_to_f32(x, 0, M, b.xf);
    if (problem().int8_activations) {
      quantize_int8_activations_into(b.xf, M, K, group_of_k_.data(), w_.num_groups, b.codes,
                                     b.scales, b.absmax);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) {
          b.xf[m * K + k] =
              static_cast<float>(b.codes[m * K + k]) * b.scales[m * w_.num_groups + group_of_k_[k]];
        }
      }
    }
    sgemm_by_column_tiles(
        b.xf, M, K, w_.N, TileOrder::kKMajor,
        [&](int64_t n0, int64_t count, float* scratch) {
          dequant_int_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y, b.tile, b.ytmp);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;
    int8_t* codes = nullptr;
    float* scales = nullptr;
    float* absmax = nullptr;
    float* tile = nullptr;
    float* ytmp = nullptr;
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * w_.K);
    if (problem().int8_activations) {
      b.codes = c.take<int8_t>(M * w_.K);
      b.scales = c.take<float>(M * w_.num_groups);
      b.absmax = c.take<float>(w_.num_groups);
    }
    b.tile = c.take<float>(w_.K * kBlasTileN);
    if (problem().out_dtype != DType::kF32) b.ytmp = c.take<float>(M * kBlasTileN);
    return b;
  }

  IntWeights w_;
  std::vector<int32_t> group_of_k_;
};

class IntBlas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_platform(device, Platform::kCpu));
    return require_int_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedIntBlas>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_int() {
  static const IntBlas kernel;
  return kernel;
}

}  // namespace qlinear
