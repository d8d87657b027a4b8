#include "quantize/int_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qlinear::quantize {

double stored_scale(double scale, DType dtype) {
  const auto f = static_cast<float>(scale);
  double s = f;
  if (dtype == DType::kF16) s = f16_to_f32(f32_to_f16(f));
  if (dtype == DType::kBF16) s = bf16_to_f32(f32_to_bf16(f));
  if (s > 0.0 || !std::isfinite(scale)) return s;
  // A group of (near-)zeros: any positive scale represents it; take the smallest one.
  if (dtype == DType::kF16) return f16_to_f32(1);
  if (dtype == DType::kBF16) return bf16_to_f32(1);
  return std::numeric_limits<float>::denorm_min();
}

GroupParams minmax_params(const double* w, int64_t n, int64_t stride, const IntGrid& grid,
                          double ratio) {
  double lo = 0.0;
  double hi = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, w[i * stride]);
    hi = std::max(hi, w[i * stride]);
  }
  lo *= ratio;
  hi *= ratio;
  const uint32_t maxq = grid.maxq();
  GroupParams p;
  if (grid.sym) {
    const double amax = std::max(-lo, hi);
    p.scale = stored_scale(2.0 * amax / maxq, grid.scale_dtype);
    p.zero = 1u << (grid.bits - 1);
    return p;
  }
  p.scale = stored_scale((hi - lo) / maxq, grid.scale_dtype);
  const double z = std::nearbyint(-lo / p.scale);
  const double zmin = grid.min_zero_one ? 1.0 : 0.0;
  p.zero = static_cast<uint32_t>(std::clamp(std::isfinite(z) ? z : 0.0, zmin, double(maxq)));
  return p;
}

uint32_t quantize_code(double w, const GroupParams& p, uint32_t maxq) {
  const double q = std::nearbyint(w / p.scale) + p.zero;
  if (!(q > 0.0)) return 0;  // NaN lands here too (such weights are refused before)
  return q >= maxq ? maxq : static_cast<uint32_t>(q);
}

double group_error(const double* w, const double* importance, int64_t n, int64_t stride,
                   const GroupParams& p, uint32_t maxq) {
  double err = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = w[i * stride];
    const double d = x - dequantize_code(quantize_code(x, p, maxq), p);
    err += (importance ? importance[i] : 1.0) * d * d;
  }
  return err;
}

GroupParams search_params(const double* w, const double* importance, int64_t n, int64_t stride,
                          const IntGrid& grid, int steps, double max_shrink) {
  GroupParams best = minmax_params(w, n, stride, grid, 1.0);
  double best_err = group_error(w, importance, n, stride, best, grid.maxq());
  for (int i = 1; i <= steps; ++i) {
    const double ratio = 1.0 - max_shrink * i / steps;
    const GroupParams p = minmax_params(w, n, stride, grid, ratio);
    const double err = group_error(w, importance, n, stride, p, grid.maxq());
    if (err < best_err) {
      best = p;
      best_err = err;
    }
  }
  return best;
}

IntLayer rtn_quantize(const std::vector<double>& w, int64_t N, int64_t K, int64_t group_size,
                      const IntGrid& grid, const std::vector<double>& importance,
                      bool clip_search) {
  IntLayer out;
  out.N = N;
  out.K = K;
  out.group_size = group_size;
  const int64_t groups = K / group_size;
  out.codes.assign(static_cast<size_t>(K * N), 0);
  out.zeros.assign(static_cast<size_t>(groups * N), 0);
  out.scales.assign(static_cast<size_t>(groups * N), 0.0);
  out.dequant.assign(static_cast<size_t>(N * K), 0.0);
  out.g_idx.resize(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) out.g_idx[static_cast<size_t>(k)] = int32_t(k / group_size);
  const uint32_t maxq = grid.maxq();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const double* row = w.data() + n * K + g * group_size;
      const double* imp = importance.empty() ? nullptr : importance.data() + g * group_size;
      const GroupParams p = clip_search ? search_params(row, imp, group_size, 1, grid)
                                        : minmax_params(row, group_size, 1, grid);
      out.scales[static_cast<size_t>(g * N + n)] = p.scale;
      out.zeros[static_cast<size_t>(g * N + n)] = p.zero;
      for (int64_t i = 0; i < group_size; ++i) {
        const int64_t k = g * group_size + i;
        const uint32_t q = quantize_code(row[i], p, maxq);
        out.codes[static_cast<size_t>(k * N + n)] = q;
        out.dequant[static_cast<size_t>(n * K + k)] = dequantize_code(q, p);
      }
    }
  }
  return out;
}

}  // namespace qlinear::quantize
