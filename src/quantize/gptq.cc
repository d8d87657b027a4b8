#include "quantize/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace qlinear::quantize {

bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0.0)) return false;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
    for (int64_t i = 0; i < j; ++i) a[i * n + j] = 0.0;
  }
  return true;
}

namespace {

// The upper Cholesky factor U of H^-1 (H^-1 = U^T U), from the lower factor L of H:
// H^-1 = L^-T L^-1, whose lower factor is then transposed.
bool inverse_upper_factor(std::vector<double>& h, int64_t n) {
  if (!cholesky_lower(h, n)) return false;
  // Linv = L^-1 (lower), by forward substitution column by column.
  std::vector<double> linv(static_cast<size_t>(n * n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    linv[j * n + j] = 1.0 / h[j * n + j];
    for (int64_t i = j + 1; i < n; ++i) {
      double s = 0.0;
      for (int64_t k = j; k < i; ++k) s += h[i * n + k] * linv[k * n + j];
      linv[i * n + j] = -s / h[i * n + i];
    }
  }
  // H^-1 = Linv^T Linv.
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (int64_t k = i; k < n; ++k) s += linv[k * n + i] * linv[k * n + j];
      h[i * n + j] = s;
      h[j * n + i] = s;
    }
  }
  if (!cholesky_lower(h, n)) return false;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      h[i * n + j] = h[j * n + i];
      h[j * n + i] = 0.0;
    }
  }
  return true;
}

}  // namespace

Result<IntLayer> gptq_quantize(const std::vector<double>& w_in, int64_t N, int64_t K,
                               std::vector<double> h, const GptqOptions& o,
                               const std::string& layer) {
  const int64_t gs = o.group_size;
  if (gs <= 0 || K % gs != 0 || static_cast<int64_t>(h.size()) != K * K ||
      static_cast<int64_t>(w_in.size()) != N * K) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: GPTQ needs K ({}) a multiple of the group size ({}) and a [K, K] "
                      "Hessian",
                      layer, K, gs);
  }
  std::vector<double> w = w_in;
  // Inputs that never fire carry no information: their weights are zeroed, as in AutoGPTQ.
  for (int64_t k = 0; k < K; ++k) {
    if (h[k * K + k] == 0.0) {
      h[k * K + k] = 1.0;
      for (int64_t n = 0; n < N; ++n) w[n * K + k] = 0.0;
    }
  }
  std::vector<int64_t> perm(static_cast<size_t>(K));
  std::iota(perm.begin(), perm.end(), 0);
  if (o.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h[a * K + a] > h[b * K + b]; });
    std::vector<double> hp(h.size());
    std::vector<double> wp(w.size());
    for (int64_t i = 0; i < K; ++i) {
      for (int64_t j = 0; j < K; ++j) hp[i * K + j] = h[perm[i] * K + perm[j]];
      for (int64_t n = 0; n < N; ++n) wp[n * K + i] = w[n * K + perm[i]];
    }
    h = std::move(hp);
    w = std::move(wp);
  }
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += h[k * K + k];
  mean_diag /= static_cast<double>(K);
  for (int64_t k = 0; k < K; ++k) h[k * K + k] += o.damp * mean_diag;
  if (!inverse_upper_factor(h, K)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: the calibration Hessian is not positive definite after damping {} x "
                      "mean diag; give more (or more varied) --calib text",
                      layer, o.damp);
  }
  const std::vector<double>& u = h;  // upper factor of H^-1

  const uint32_t maxq = o.grid.maxq();
  const int64_t groups = K / gs;
  IntLayer out;
  out.N = N;
  out.K = K;
  out.group_size = gs;
  out.codes.assign(static_cast<size_t>(K * N), 0);
  out.zeros.assign(static_cast<size_t>(groups * N), 0);
  out.scales.assign(static_cast<size_t>(groups * N), 0.0);
  out.dequant.assign(static_cast<size_t>(N * K), 0.0);
  out.g_idx.assign(static_cast<size_t>(K), 0);
  std::vector<GroupParams> params(static_cast<size_t>(N));
  std::vector<double> err(static_cast<size_t>(N * o.block));

  for (int64_t i1 = 0; i1 < K; i1 += o.block) {
    const int64_t i2 = std::min(i1 + o.block, K);
    const int64_t count = i2 - i1;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t col = i1 + i;
      if (col % gs == 0) {
        // Parameters of the next group from the weights as updated so far.
        const int64_t g = col / gs;
        for (int64_t n = 0; n < N; ++n) {
          const double* row = w.data() + n * K + col;
          params[n] = o.clip_search ? search_params(row, nullptr, gs, 1, o.grid)
                                    : minmax_params(row, gs, 1, o.grid);
          out.scales[static_cast<size_t>(g * N + n)] = params[n].scale;
          out.zeros[static_cast<size_t>(g * N + n)] = params[n].zero;
        }
      }
      const double d = u[col * K + col];
      const int64_t orig = perm[col];
      out.g_idx[static_cast<size_t>(orig)] = static_cast<int32_t>(col / gs);
      for (int64_t n = 0; n < N; ++n) {
        double* row = w.data() + n * K;
        const uint32_t q = quantize_code(row[col], params[n], maxq);
        const double dq = dequantize_code(q, params[n]);
        out.codes[static_cast<size_t>(orig * N + n)] = q;
        out.dequant[static_cast<size_t>(n * K + orig)] = dq;
        const double e = (row[col] - dq) / d;
        err[n * o.block + i] = e;
        // Feed the error into the rest of the block.
        for (int64_t j = col + 1; j < i2; ++j) row[j] -= e * u[col * K + j];
      }
    }
    // Lazy update of every later column with the whole block's errors.
    for (int64_t n = 0; n < N; ++n) {
      double* row = w.data() + n * K;
      const double* e = err.data() + n * o.block;
      for (int64_t i = 0; i < count; ++i) {
        const double ei = e[i];
        const double* urow = u.data() + (i1 + i) * K;
        for (int64_t j = i2; j < K; ++j) row[j] -= ei * urow[j];
      }
    }
  }
  return out;
}

}  // namespace qlinear::quantize
