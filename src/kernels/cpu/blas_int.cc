// cpu.int.blas.sgemm | scheme: int weight-only w2/w4/w8 (a f32/bf16/f16), any group size,
//   zero points or symmetric, act-order (g_idx); int8 activations (--int8-activations) as
//   dequantized q * s, the portable path of that mode on CPUs without avx512_vnni
// after prepare: a copy of the canonical IntWeights | limits: CPU only; per run, each tile of
//   kBlasTileN output columns is dequantized to f32 [K, tile] and multiplied by cblas_sgemm
//   (OpenBLAS, its own threads; Stream::threads is not applied)
// tested on: AMD EPYC x86-64 (2 cores), OpenBLAS 0.3.21 pthread, ASan+UBSan
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cpu/dequant_tile.h"
#include "kernels/kernel.h"
#include "kernels/reference/activation_quant.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {

namespace {

constexpr std::string_view kName = "cpu.int.blas.sgemm";

class PreparedIntBlas final : public PreparedLinear {
 public:
  PreparedIntBlas(IntWeights w, bool int8_activations)
      : w_(std::move(w)), int8_activations_(int8_activations) {}

  Status run(const TensorView& x, const TensorView& y, Stream& /*stream*/) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, kName));
    const int64_t M = x.dim(0);
    const int64_t K = w_.K;
    const int64_t N = w_.N;
    QL_RETURN_IF_ERROR(check_output(y, M, N, kName));
    if (M == 0) return Status::ok_status();
    if (int8_activations_) {
      const std::vector<int32_t> group_of_k = int8_activation_groups(w_);
      const Int8Activations q =
          quantize_int8_activations(xf.data(), M, K, group_of_k, w_.num_groups);
      dequantize_int8_activations(q, group_of_k, xf.data());
    }
    sgemm_by_column_tiles(
        xf.data(), M, K, N, TileOrder::kKMajor,
        [&](int64_t n0, int64_t count, float* scratch) {
          dequant_int_tile(w_, n0, count, scratch);
          return scratch;
        },
        w_.bias, y.data_as<float>());
    return Status::ok_status();
  }

 private:
  IntWeights w_;
  bool int8_activations_;
};

class IntBlas final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& p, const Device& device) const override {
    if (Verdict cpu = check_cpu_device(device); !cpu.ok()) return cpu;
    return check_int_problem(p);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  const Device& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kName));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedIntBlas>(*w, problem.int8_activations));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_blas_int() {
  static const IntBlas kernel;
  return kernel;
}

}  // namespace qlinear
