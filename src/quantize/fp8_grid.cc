#include "quantize/fp8_grid.h"

#include <algorithm>
#include <cmath>

namespace qlinear::quantize {

double fp8_scale(double amax, DType scale_dtype) {
  if (!(amax > 0.0)) return 1.0;
  const auto f = static_cast<float>(amax / 448.0);
  if (scale_dtype == DType::kBF16) {
    // Round up, so that no weight lands beyond 448 and saturates.
    double s = bf16_to_f32(f32_to_bf16(f));
    if (s < f) s = bf16_to_f32(static_cast<uint16_t>(f32_to_bf16(f) + 1));
    return s;
  }
  if (scale_dtype == DType::kF16) {
    double s = f16_to_f32(f32_to_f16(f));
    if (s < f) s = f16_to_f32(static_cast<uint16_t>(f32_to_f16(f) + 1));
    return s;
  }
  return f;
}

Fp8Layer fp8_quantize(const std::vector<double>& w, int64_t N, int64_t K,
                      Fp8WeightGranularity granularity, int64_t block_n, int64_t block_k,
                      DType scale_dtype) {
  int64_t bn = N;
  int64_t bk = K;
  if (granularity == Fp8WeightGranularity::kChannel) bn = 1;
  if (granularity == Fp8WeightGranularity::kBlock) {
    bn = block_n;
    bk = block_k;
  }
  const int64_t rows = (N + bn - 1) / bn;
  const int64_t cols = (K + bk - 1) / bk;
  Fp8Layer out;
  out.codes.assign(static_cast<size_t>(N * K), 0);
  out.dequant.assign(static_cast<size_t>(N * K), 0.0);
  out.scales.assign(static_cast<size_t>(rows * cols), 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t n_end = std::min(N, (r + 1) * bn);
      const int64_t k_end = std::min(K, (c + 1) * bk);
      double amax = 0.0;
      for (int64_t n = r * bn; n < n_end; ++n) {
        for (int64_t k = c * bk; k < k_end; ++k) amax = std::max(amax, std::fabs(w[n * K + k]));
      }
      const double s = fp8_scale(amax, scale_dtype);
      out.scales[static_cast<size_t>(r * cols + c)] = s;
      for (int64_t n = r * bn; n < n_end; ++n) {
        for (int64_t k = c * bk; k < k_end; ++k) {
          const uint8_t q = f32_to_f8e4m3(static_cast<float>(w[n * K + k] / s));
          out.codes[static_cast<size_t>(n * K + k)] = q;
          out.dequant[static_cast<size_t>(n * K + k)] = static_cast<double>(f8e4m3_to_f32(q)) * s;
        }
      }
    }
  }
  return out;
}

}  // namespace qlinear::quantize
