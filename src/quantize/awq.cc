#include "quantize/awq.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace qlinear::quantize {

double output_error(const std::vector<double>& d, int64_t N, int64_t K,
                    const std::vector<double>& gram) {
  std::vector<double> dg(static_cast<size_t>(N * K));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(N), static_cast<int>(K),
              static_cast<int>(K), 1.0, d.data(), static_cast<int>(K), gram.data(),
              static_cast<int>(K), 0.0, dg.data(), static_cast<int>(K));
  double sum = 0.0;
  for (size_t i = 0; i < dg.size(); ++i) sum += dg[i] * d[i];
  return sum;
}

AwqSearch awq_search(std::span<const WeightRef> layers, int64_t K, int64_t group_size,
                     const IntGrid& grid, const std::vector<double>& gram,
                     const std::vector<double>& abs_mean, int steps) {
  AwqSearch best;
  best.loss = std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(K));
  for (int step = 0; step < steps; ++step) {
    const double alpha = static_cast<double>(step) / steps;
    double lo = std::numeric_limits<double>::infinity();
    double hi = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      s[k] = std::pow(std::max(abs_mean[k], 1e-4), alpha);
      lo = std::min(lo, s[k]);
      hi = std::max(hi, s[k]);
    }
    const double norm = std::sqrt(lo * hi);
    for (double& v : s) v /= norm;
    double loss = 0.0;
    for (const WeightRef& ref : layers) {
      const std::vector<double>& w = *ref.w;
      std::vector<double> scaled(w.size());
      for (int64_t n = 0; n < ref.N; ++n) {
        for (int64_t k = 0; k < K; ++k) scaled[n * K + k] = w[n * K + k] * s[k];
      }
      // AutoAWQ measures the scales with plain min-max RTN; clipping is searched afterwards.
      const IntLayer q = rtn_quantize(scaled, ref.N, K, group_size, grid, {}, false);
      std::vector<double> d(w.size());
      for (int64_t n = 0; n < ref.N; ++n) {
        for (int64_t k = 0; k < K; ++k) {
          d[n * K + k] = w[n * K + k] - q.dequant[n * K + k] / s[k];
        }
      }
      loss += output_error(d, ref.N, K, gram);
    }
    if (step == 0) best.loss_unscaled = loss;
    if (loss < best.loss) {
      best.loss = loss;
      best.alpha = alpha;
      best.scales = s;
    }
  }
  return best;
}

}  // namespace qlinear::quantize
