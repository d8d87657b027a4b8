#include "kernels/cpu/dense_panels.h"

#include <fmt/format.h>
#include <omp.h>

#include <cstring>

#include "kernels/common/requirements.h"
#include "kernels/cpu/output_store.h"

namespace qlinear::dense_cpu {

Result<DensePanels> make_dense_panels(const DenseWeights& w, int64_t panel_multiple,
                                      std::string_view kernel, const Canonical& weights) {
  if (w.dtype != DType::kBF16 && w.dtype != DType::kF16) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: layer \"{}\": dense weights are {}; this kernel keeps bf16 or f16 "
                      "weights (check() rejects the others)",
                      kernel, weights.name, dtype_name(w.dtype));
  }
  DensePanels p;
  p.dtype = w.dtype;
  p.K = w.K;
  p.N = w.N;
  p.Kp = (w.K + 1) / 2 * 2;
  p.panels = (w.N + kPanelN * panel_multiple - 1) / (kPanelN * panel_multiple) * panel_multiple;
  p.bias = w.bias;
  QL_ASSIGN_OR_RETURN(p.data, Tensor::allocate(w.dtype, {p.panels, p.pairs(), kPairHalves}));
  auto* out = p.data.data_as<uint16_t>();
  const std::byte* src = w.data.data();
  const bool bf16 = w.dtype == DType::kBF16;
  const int64_t K = w.K;
  const int64_t Kp = p.Kp;
  const int64_t N = w.N;
  const int64_t panels = p.panels;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
  for (int64_t panel = 0; panel < panels; ++panel) {
    uint16_t* dst = out + panel * Kp * kPanelN;
    for (int64_t c = 0; c < kPanelN; ++c) {
      const int64_t n = panel * kPanelN + c;
      for (int64_t k = 0; k < Kp; ++k) {
        uint16_t v = 0;  // padding columns and the odd K's last pair stay +0.0
        if (n < N && k < K) std::memcpy(&v, src + 2 * (n * K + k), 2);
        const int64_t j = k / 2;
        const int64_t at = bf16 ? 2 * c + (k % 2) : kPanelN * (k % 2) + c;
        dst[j * kPairHalves + at] = v;
      }
    }
  }
  return p;
}

Verdict check_dense_native(const LinearProblem& problem, const Device& device) {
  QL_REQUIRE(require_platform(device, Platform::kCpu));
#if !defined(__x86_64__)
  return Verdict::reject(Reason::kNotCompiled, "x86-64 kernel; this binary is not for x86-64");
#endif
  QL_REQUIRE(require_scheme(problem, WeightScheme::kDense));
  if (problem.weight_dtype != DType::kBF16 && problem.weight_dtype != DType::kF16) {
    return Verdict::reject(Reason::kDtype,
                           fmt::format("dense weights are {}; needs bf16 or f16 (f32 weights have "
                                       "no narrower form to stream: cpu.dense.blas.sgemm)",
                                       dtype_name(problem.weight_dtype)));
  }
  return require_io_dtypes(problem);
}

void store_tile(const float* yt, int64_t yt_ld, int64_t rows, int64_t first_row, int64_t n0,
                int64_t count, const std::vector<float>& bias, MatrixView y) {
  const float* b = bias.empty() ? nullptr : bias.data() + n0;
  const auto elem = static_cast<int64_t>(y.element_bytes());
  for (int64_t r = 0; r < rows; ++r) {
    store_output(yt + r * yt_ld, b, count, y.dtype(),
                 static_cast<std::byte*>(y.row(first_row + r)) + n0 * elem);
  }
}

}  // namespace qlinear::dense_cpu
