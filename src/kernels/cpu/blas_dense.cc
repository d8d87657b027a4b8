// cpu.dense.blas.sgemm | scheme: unquantized weights in f32, bf16 or f16 (a f32/bf16/f16)
// after prepare: a copy of the canonical DenseWeights | limits: CPU only; f32 weights go to
//   cblas_sgemm as they are, bf16/f16 ones are widened kBlasTileN rows at a time (this OpenBLAS
//   build has no sbgemm); OpenBLAS uses its own threads, Stream::threads is not applied
// tested on: AMD EPYC x86-64 (2 cores), OpenBLAS 0.3.21 pthread, ASan+UBSan
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/dequant_tile.h"
#include "kernels/kernel.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "cpu.dense.blas.sgemm";

class PreparedDenseBlas final : public PreparedLinear {
 public:
  explicit PreparedDenseBlas(DenseWeights w) : w_(std::move(w)) {
    if (w_.dtype == DType::kF32) {
      // Kept as floats so sgemm reads them in place (byte storage is not a float array).
      f32_.resize(static_cast<std::size_t>(w_.N * w_.K));
      std::memcpy(f32_.data(), w_.data.data(), f32_.size() * sizeof(float));
      w_.data.clear();
      w_.data.shrink_to_fit();
    }
  }

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));
    if (M == 0) return Status::ok_status();
    sgemm_by_column_tiles(
        xf.data(), M, K, N, TileOrder::kNMajor,
        [&](int64_t n0, int64_t count, float* scratch) -> const float* {
          if (!f32_.empty()) return f32_.data() + n0 * K;  // f32 weights: no copy
          dequant_dense_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y.data_as<float>());
    return Status::ok_status();
  }

 private:
  DenseWeights w_;
  std::vector<float> f32_;  // [N, K] when the weights are f32
};

class DenseBlas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    if (Verdict cpu = check_cpu_device(device); !cpu.ok()) return cpu;
    return check_dense_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& /*problem*/,
                                                  const Device& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedDenseBlas>(*w));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_dense() {
  static const DenseBlas kernel;
  return kernel;
}

}  // namespace qlinear
