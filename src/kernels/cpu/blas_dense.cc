// cpu.dense.blas.sgemm | scheme: unquantized weights in f32, bf16 or f16 (a f32/bf16/f16)
// after prepare: a copy of the canonical DenseWeights | limits: CPU only; f32 weights go to
//   cblas_sgemm as they are, bf16/f16 ones are widened kBlasTileN rows at a time (this OpenBLAS
//   build has no sbgemm); OpenBLAS uses its own threads, ExecContext::threads is not applied
// tested on: AMD EPYC x86-64 (2 cores), OpenBLAS 0.3.21 pthread, ASan+UBSan
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/dequant_tile.h"
#include "kernels/kernel.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "cpu.dense.blas.sgemm";

class PreparedDenseBlas final : public PreparedLinear {
 public:
  PreparedDenseBlas(const LinearProblem& problem, DenseWeights w)
      : PreparedLinear(problem, Location::host()), w_(std::move(w)) {
    if (w_.dtype == DType::kF32) {
      // Kept as floats so sgemm reads them in place (byte storage is not a float array).
      f32_.resize(static_cast<std::size_t>(w_.N * w_.K));
      std::memcpy(f32_.data(), w_.data.data(), f32_.size() * sizeof(float));
      w_.data.clear();
      w_.data.shrink_to_fit();
    }
  }

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
    sgemm_by_column_tiles(
        b.xf, M, K, w_.N, TileOrder::kNMajor,
        [&](int64_t n0, int64_t count, float* scratch) -> const float* {
          if (!f32_.empty()) return f32_.data() + n0 * K;  // f32 weights: no copy
          dequant_dense_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y, b.tile, b.ytmp);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;
    float* tile = nullptr;
    float* ytmp = nullptr;
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * w_.K);
    if (f32_.empty()) b.tile = c.take<float>(w_.K * kBlasTileN);
    if (problem().out_dtype != DType::kF32) b.ytmp = c.take<float>(M * kBlasTileN);
    return b;
  }

  DenseWeights w_;
  std::vector<float> f32_;  // [N, K] when the weights are f32
};

class DenseBlas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    QL_REQUIRE(require_platform(device, Platform::kCpu));
    return require_dense_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedDenseBlas>(problem, *w));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_dense() {
  static const DenseBlas kernel;
  return kernel;
}

}  // namespace qlinear
