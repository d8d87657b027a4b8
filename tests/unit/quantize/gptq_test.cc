// GPTQ against a float64 re-implementation of its update written here from the paper /
// AutoGPTQ's fasterquant, with dense matrix operations and no lazy batching: H^-1 by
// Gauss-Jordan, its upper Cholesky factor, then every later column updated right after each
// quantized column.
#include "quantize/gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "quantize/awq.h"

namespace qlinear::quantize {
namespace {

using Mat = std::vector<std::vector<double>>;

Mat gauss_jordan_inverse(Mat a) {
  const size_t n = a.size();
  Mat inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    std::swap(a[c], a[piv]);
    std::swap(inv[c], inv[piv]);
    const double d = a[c][c];
    for (size_t j = 0; j < n; ++j) {
      a[c][j] /= d;
      inv[c][j] /= d;
    }
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t j = 0; j < n; ++j) {
        a[r][j] -= f * a[c][j];
        inv[r][j] -= f * inv[c][j];
      }
    }
  }
  return inv;
}

// Upper U with A = U^T U (the Cholesky-Banachiewicz recurrence on the upper side).
Mat upper_cholesky(const Mat& a) {
  const size_t n = a.size();
  Mat u(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) {
    double d = a[i][i];
    for (size_t k = 0; k < i; ++k) d -= u[k][i] * u[k][i];
    u[i][i] = std::sqrt(d);
    for (size_t j = i + 1; j < n; ++j) {
      double s = a[i][j];
      for (size_t k = 0; k < i; ++k) s -= u[k][i] * u[k][j];
      u[i][j] = s / u[i][i];
    }
  }
  return u;
}

struct Ref {
  std::vector<uint32_t> codes;  // [K, N] original column order
  std::vector<int32_t> g_idx;
  std::vector<double> dequant;  // [N, K]
};

// AutoGPTQ's Quantizer.find_params (min-max, weight=True), scales kept in f32.
void find_params(const std::vector<double>& row, int bits, bool sym, double& scale, double& zero) {
  const double maxq = std::pow(2.0, bits) - 1;
  double xmin = std::min(0.0, *std::min_element(row.begin(), row.end()));
  double xmax = std::max(0.0, *std::max_element(row.begin(), row.end()));
  if (sym) {
    xmax = std::max(std::fabs(xmin), xmax);
    xmin = -xmax;
  }
  scale = static_cast<float>((xmax - xmin) / maxq);
  zero = sym ? (maxq + 1) / 2 : std::nearbyint(-xmin / scale);
}

Ref reference_gptq(Mat W, Mat H, int bits, bool sym, int gs, bool act_order) {
  const size_t N = W.size();
  const size_t K = W[0].size();
  const double maxq = std::pow(2.0, bits) - 1;
  std::vector<size_t> perm(K);
  std::iota(perm.begin(), perm.end(), 0);
  if (act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](size_t a, size_t b) { return H[a][a] > H[b][b]; });
  }
  Mat Wp(N, std::vector<double>(K));
  Mat Hp(K, std::vector<double>(K));
  for (size_t i = 0; i < K; ++i) {
    for (size_t n = 0; n < N; ++n) Wp[n][i] = W[n][perm[i]];
    for (size_t j = 0; j < K; ++j) Hp[i][j] = H[perm[i]][perm[j]];
  }
  double mean = 0;
  for (size_t i = 0; i < K; ++i) mean += Hp[i][i];
  mean /= K;
  for (size_t i = 0; i < K; ++i) Hp[i][i] += 0.01 * mean;
  const Mat U = upper_cholesky(gauss_jordan_inverse(Hp));
  Ref ref;
  ref.codes.assign(K * N, 0);
  ref.g_idx.assign(K, 0);
  ref.dequant.assign(N * K, 0.0);
  std::vector<double> scale(N), zero(N);
  for (size_t i = 0; i < K; ++i) {
    if (i % gs == 0) {
      for (size_t n = 0; n < N; ++n) {
        std::vector<double> group(Wp[n].begin() + i, Wp[n].begin() + i + gs);
        find_params(group, bits, sym, scale[n], zero[n]);
      }
    }
    ref.g_idx[perm[i]] = static_cast<int32_t>(i / gs);
    for (size_t n = 0; n < N; ++n) {
      const double q = std::clamp(std::nearbyint(Wp[n][i] / scale[n]) + zero[n], 0.0, maxq);
      const double dq = (q - zero[n]) * scale[n];
      ref.codes[perm[i] * N + n] = static_cast<uint32_t>(q);
      ref.dequant[n * K + perm[i]] = dq;
      const double err = (Wp[n][i] - dq) / U[i][i];
      for (size_t j = i + 1; j < K; ++j) Wp[n][j] -= err * U[i][j];
    }
  }
  return ref;
}

struct Problem {
  int64_t N = 24;
  int64_t K = 96;
  std::vector<double> w;  // [N, K]
  std::vector<double> h;  // [K, K]
  Mat W, H;
};

Problem make_problem(uint64_t seed) {
  Problem p;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  const int64_t T = 300;
  std::vector<double> x(static_cast<size_t>(T * p.K));
  // Correlated inputs with channels of very different scale, as in real activations.
  for (int64_t t = 0; t < T; ++t) {
    const double common = normal(rng);
    for (int64_t k = 0; k < p.K; ++k) {
      x[t * p.K + k] = (normal(rng) + 0.5 * common) * (1.0 + 3.0 * (k % 7 == 0));
    }
  }
  p.w.resize(static_cast<size_t>(p.N * p.K));
  for (double& v : p.w) v = 0.05 * normal(rng);
  p.h.assign(static_cast<size_t>(p.K * p.K), 0.0);
  for (int64_t i = 0; i < p.K; ++i) {
    for (int64_t j = 0; j < p.K; ++j) {
      double s = 0;
      for (int64_t t = 0; t < T; ++t) s += x[t * p.K + i] * x[t * p.K + j];
      p.h[i * p.K + j] = 2.0 * s / T;
    }
  }
  p.W.assign(p.N, std::vector<double>(p.K));
  p.H.assign(p.K, std::vector<double>(p.K));
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t k = 0; k < p.K; ++k) p.W[n][k] = p.w[n * p.K + k];
  }
  for (int64_t i = 0; i < p.K; ++i) {
    for (int64_t j = 0; j < p.K; ++j) p.H[i][j] = p.h[i * p.K + j];
  }
  return p;
}

struct Case {
  int bits;
  bool sym;
  int group;
  bool act_order;
};

class GptqMatches : public testing::TestWithParam<Case> {};

TEST_P(GptqMatches, Float64Reimplementation) {
  const Case c = GetParam();
  const Problem p = make_problem(42 + c.bits + c.group);
  GptqOptions o;
  o.grid.bits = c.bits;
  o.grid.sym = c.sym;
  o.grid.scale_dtype = DType::kF32;
  o.group_size = c.group;
  o.act_order = c.act_order;
  o.block = 32;  // several lazy blocks over K = 96
  o.clip_search = false;
  auto got = gptq_quantize(p.w, p.N, p.K, p.h, o, "test");
  ASSERT_TRUE(got.ok()) << got.status().message();
  const Ref ref = reference_gptq(p.W, p.H, c.bits, c.sym, c.group, c.act_order);
  EXPECT_EQ(got->g_idx, ref.g_idx);
  int mismatched = 0;
  for (size_t i = 0; i < ref.codes.size(); ++i) mismatched += got->codes[i] != ref.codes[i];
  // The same arithmetic in another order: a rounding tie may flip a code or two.
  EXPECT_LE(mismatched, 2) << "of " << ref.codes.size();
  double max_diff = 0;
  for (size_t i = 0; i < ref.dequant.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(got->dequant[i] - ref.dequant[i]));
  }
  if (mismatched == 0) {
    EXPECT_LT(max_diff, 1e-9);
  }

  // And GPTQ beats round-to-nearest on the output error it minimizes.
  IntGrid g = o.grid;
  const IntLayer rtn = rtn_quantize(p.w, p.N, p.K, c.group, g, {}, false);
  std::vector<double> d_gptq(p.w.size()), d_rtn(p.w.size());
  for (size_t i = 0; i < p.w.size(); ++i) {
    d_gptq[i] = p.w[i] - got->dequant[i];
    d_rtn[i] = p.w[i] - rtn.dequant[i];
  }
  EXPECT_LT(output_error(d_gptq, p.N, p.K, p.h), output_error(d_rtn, p.N, p.K, p.h));
}

INSTANTIATE_TEST_SUITE_P(Cases, GptqMatches,
                         testing::Values(Case{4, true, 32, false}, Case{4, true, 32, true},
                                         Case{4, false, 16, false}, Case{4, false, 16, true},
                                         Case{8, true, 96, true}));

TEST(Gptq, NotPositiveDefiniteIsAnError) {
  std::vector<double> w(8 * 8, 0.1);
  std::vector<double> h(64, 0.0);
  for (int i = 0; i < 8; ++i) h[i * 8 + i] = 1.0;
  h[1] = h[8] = 5.0;  // |off-diagonal| > diagonal
  GptqOptions o;
  o.group_size = 8;
  const auto got = gptq_quantize(w, 8, 8, h, o, "model.layers.0.mlp.up_proj");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("model.layers.0.mlp.up_proj"), std::string::npos);
  EXPECT_NE(got.status().message().find("positive definite"), std::string::npos);
}

}  // namespace
}  // namespace qlinear::quantize
