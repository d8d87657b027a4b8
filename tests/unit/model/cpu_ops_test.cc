// The CPU decoder operations against their definitions computed in double here: attention
// (causal, grouped-query, sliding window, f32 and bf16 caches, blocked online softmax across
// several key blocks), RoPE, RMSNorm (per row and per head), SiLU*mul, and views with a leading
// dimension.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "argmax_rows.h"
#include "model/ops.h"

namespace qlinear {
namespace {

std::vector<float> random(std::mt19937& rng, std::size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(CpuOps, AttentionMatchesSoftmaxInDouble) {
  auto ops = make_cpu_ops(2);
  std::mt19937 rng(1);
  for (DType kv_dtype : {DType::kF32, DType::kBF16}) {
    for (int64_t window : {int64_t{0}, int64_t{5}}) {
      const int64_t heads = 6, kv_heads = 2, d = 16, capacity = 80, T = 3, layers = 2;
      const int64_t width = kv_heads * d;
      std::vector<float> kf = random(rng, layers * capacity * width);
      std::vector<float> vf = random(rng, layers * capacity * width);
      std::vector<uint16_t> kb(kf.size()), vb(vf.size());
      for (std::size_t i = 0; i < kf.size(); ++i) {
        kb[i] = f32_to_bf16(kf[i]);
        vb[i] = f32_to_bf16(vf[i]);
        if (kv_dtype == DType::kBF16) {
          kf[i] = bf16_to_f32(kb[i]);
          vf[i] = bf16_to_f32(vb[i]);
        }
      }
      void* kdata = kv_dtype == DType::kF32 ? static_cast<void*>(kf.data()) : kb.data();
      void* vdata = kv_dtype == DType::kF32 ? static_cast<void*>(vf.data()) : vb.data();
      KvCacheView cache{layers,
                        capacity,
                        kv_heads,
                        d,
                        MatrixView(kdata, kv_dtype, layers * capacity, width, width),
                        MatrixView(vdata, kv_dtype, layers * capacity, width, width)};
      const std::vector<int32_t> pos = {70, 71, 40};  // 70+ keys: several blocks of 32
      std::vector<float> q = random(rng, T * heads * d);
      std::vector<float> out(T * heads * d, NAN);
      const AttentionShape shape{heads, kv_heads, d, window};
      ASSERT_TRUE(ops->attention(ConstMatrixView::dense(q.data(), DType::kF32, T, heads * d),
                                 ConstMatrixView::dense(pos.data(), DType::kI32, 1, T), cache, 1,
                                 shape, MatrixView::dense(out.data(), DType::kF32, T, heads * d))
                      .ok());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t g = h / (heads / kv_heads);
          const int64_t first = window > 0 ? std::max<int64_t>(0, pos[t] - window + 1) : 0;
          std::vector<double> s;
          double m = -1e300;
          for (int64_t j = first; j <= pos[t]; ++j) {
            double dot = 0;
            for (int64_t i = 0; i < d; ++i) {
              dot += q[(t * heads + h) * d + i] * kf[(capacity + j) * width + g * d + i];
            }
            s.push_back(dot / 4.0);
            m = std::max(m, s.back());
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - m));
          for (int64_t i = 0; i < d; ++i) {
            double want = 0;
            for (int64_t j = first; j <= pos[t]; ++j) {
              want += s[j - first] / z * vf[(capacity + j) * width + g * d + i];
            }
            EXPECT_NEAR(out[(t * heads + h) * d + i], want, 2e-5)
                << dtype_name(kv_dtype) << " window " << window << " t " << t << " h " << h;
          }
        }
      }
    }
  }
}

// A cache of several sequences (KvCacheView): store_kv writes row t into its own sequence's rows
// and attention reads only those, for the batched-decode layout (one row per sequence) and a
// prompt chunk of one sequence other than the first; a row past the last sequence is an error.
TEST(CpuOps, CacheSequencesAreIndependent) {
  auto ops = make_cpu_ops(2);
  std::mt19937 rng(7);
  const int64_t heads = 4, kv_heads = 2, d = 16, capacity = 40, layers = 2, sequences = 3;
  const int64_t width = kv_heads * d, rows = layers * sequences * capacity;
  std::vector<float> kf = random(rng, rows * width), vf = random(rng, rows * width);
  const std::vector<float> k0 = kf, v0 = vf;
  auto view = [&](std::vector<float>& m) {
    return MatrixView(m.data(), DType::kF32, rows, width, width);
  };
  KvCacheView cache{layers, capacity, kv_heads, d, view(kf), view(vf), sequences, 0, 1};
  // Batched decode: row s is sequence s at its own position.
  const int64_t T = 3;
  const std::vector<int32_t> pos = {33, 7, 20};
  std::vector<float> k = random(rng, T * width), v = random(rng, T * width);
  const auto positions = ConstMatrixView::dense(pos.data(), DType::kI32, 1, T);
  ASSERT_TRUE(ops->store_kv(ConstMatrixView::dense(k.data(), DType::kF32, T, width),
                            ConstMatrixView::dense(v.data(), DType::kF32, T, width), positions,
                            cache, 1)
                  .ok());
  std::vector<float> kw = k0, vw = v0;  // what the cache must hold now
  for (int64_t s = 0; s < T; ++s) {
    const int64_t row = (1 * sequences + s) * capacity + pos[s];
    std::copy(k.begin() + s * width, k.begin() + (s + 1) * width, kw.begin() + row * width);
    std::copy(v.begin() + s * width, v.begin() + (s + 1) * width, vw.begin() + row * width);
  }
  EXPECT_EQ(kf, kw);
  EXPECT_EQ(vf, vw);
  std::vector<float> q = random(rng, T * heads * d);
  std::vector<float> out(T * heads * d, NAN);
  const AttentionShape shape{heads, kv_heads, d, 0};
  ASSERT_TRUE(ops->attention(ConstMatrixView::dense(q.data(), DType::kF32, T, heads * d), positions,
                             cache, 1, shape,
                             MatrixView::dense(out.data(), DType::kF32, T, heads * d))
                  .ok());
  for (int64_t s = 0; s < T; ++s) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t g = h / (heads / kv_heads);
      const int64_t base = (1 * sequences + s) * capacity;  // sequence s of layer 1
      std::vector<double> e;
      double m = -1e300;
      for (int64_t j = 0; j <= pos[s]; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += q[(s * heads + h) * d + i] * kf[(base + j) * width + g * d + i];
        e.push_back(dot / 4.0);
        m = std::max(m, e.back());
      }
      double z = 0;
      for (double& x : e) z += (x = std::exp(x - m));
      for (int64_t i = 0; i < d; ++i) {
        double want = 0;
        for (int64_t j = 0; j <= pos[s]; ++j) want += e[j] / z * vf[(base + j) * width + g * d + i];
        EXPECT_NEAR(out[(s * heads + h) * d + i], want, 2e-5) << "sequence " << s << " h " << h;
      }
    }
  }
  // A prompt chunk of sequence 2: both rows into sequence 2's rows of layer 0.
  KvCacheView chunk = cache;
  chunk.first_sequence = 2;
  chunk.rows_per_sequence = 0;
  const std::vector<int32_t> pos2 = {3, 4};
  std::vector<float> k2 = random(rng, 2 * width);
  const auto positions2 = ConstMatrixView::dense(pos2.data(), DType::kI32, 1, 2);
  ASSERT_TRUE(ops->store_kv(ConstMatrixView::dense(k2.data(), DType::kF32, 2, width),
                            ConstMatrixView::dense(k2.data(), DType::kF32, 2, width), positions2,
                            chunk, 0)
                  .ok());
  for (int64_t t = 0; t < 2; ++t) {
    const int64_t row = (0 * sequences + 2) * capacity + pos2[t];
    for (int64_t i = 0; i < width; ++i) {
      EXPECT_EQ(kf[row * width + i], k2[t * width + i]);
      EXPECT_EQ(vf[row * width + i], k2[t * width + i]);
    }
  }
  // Two rows of one sequence each from sequence 2: the second has no sequence.
  KvCacheView past = cache;
  past.first_sequence = 2;
  const Status s =
      ops->store_kv(ConstMatrixView::dense(k2.data(), DType::kF32, 2, width),
                    ConstMatrixView::dense(k2.data(), DType::kF32, 2, width), positions2, past, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("do not fit a cache of 3 sequences"), std::string::npos)
      << s.message();
}

// The FP8 cache (model/kv_fp8.h): store_kv writes, per row and kv head, the scale max(amax / 448,
// 1 / (448 * 512)) and the codes e4m3(x / scale), which read back within e4m3's rounding of x
// (half a unit in the last place: 2^-4 relative, or scale * 2^-10 below the normal range); an
// all-zero head gets the floor and zero codes. Attention over it equals attention over an f32
// cache holding those values, bit for bit, and a cache without scales or of mixed dtypes is an
// error naming what is wrong.
TEST(CpuOps, Fp8CacheStoresCodesAndScalesAndAttendsTheirValues) {
  auto ops = make_cpu_ops(2);
  std::mt19937 rng(11);
  const int64_t heads = 4, kv_heads = 2, d = 16, capacity = 40, layers = 2, T = 5;
  const int64_t width = kv_heads * d, rows = layers * capacity;
  std::vector<float> k = random(rng, T * width), v = random(rng, T * width);
  for (int64_t i = 0; i < d; ++i) {
    k[1 * width + d + i] = 0.0f;                      // row 1, head 1: all zero
    v[2 * width + i] *= 1000.0f;                      // row 2, head 0: large
    k[3 * width + i] = i == 5 ? 3.0f : 1e-5f * k[i];  // row 3, head 0: subnormal codes
  }
  std::vector<uint8_t> kc(rows * width, 0), vc(rows * width, 0);
  std::vector<float> ks(rows * kv_heads, 0.0f), vs(rows * kv_heads, 0.0f);
  KvCacheView cache{layers,
                    capacity,
                    kv_heads,
                    d,
                    MatrixView(kc.data(), DType::kF8E4M3, rows, width, width),
                    MatrixView(vc.data(), DType::kF8E4M3, rows, width, width)};
  cache.k_scale = MatrixView(ks.data(), DType::kF32, rows, kv_heads, kv_heads);
  cache.v_scale = MatrixView(vs.data(), DType::kF32, rows, kv_heads, kv_heads);
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4};
  const auto positions = ConstMatrixView::dense(pos.data(), DType::kI32, 1, T);
  ASSERT_TRUE(ops->store_kv(ConstMatrixView::dense(k.data(), DType::kF32, T, width),
                            ConstMatrixView::dense(v.data(), DType::kF32, T, width), positions,
                            cache, 1)
                  .ok());
  // The values the cache holds, as an f32 cache.
  std::vector<float> kf(rows * width, 0.0f), vf(rows * width, 0.0f);
  for (const auto& [src, codes, scales, values] :
       {std::tuple{&k, &kc, &ks, &kf}, std::tuple{&v, &vc, &vs, &vf}}) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = capacity + pos[t];  // layer 1
      for (int64_t h = 0; h < kv_heads; ++h) {
        float amax = 0.0f;
        for (int64_t i = 0; i < d; ++i)
          amax = std::max(amax, std::fabs((*src)[t * width + h * d + i]));
        const float scale = std::max(amax / 448.0f, 1.0f / (448.0f * 512.0f));
        ASSERT_EQ((*scales)[row * kv_heads + h], scale) << "row " << t << " head " << h;
        for (int64_t i = 0; i < d; ++i) {
          const float x = (*src)[t * width + h * d + i];
          const uint8_t code = (*codes)[row * width + h * d + i];
          EXPECT_EQ(code, f32_to_f8e4m3(x / scale)) << "row " << t << " head " << h << " " << i;
          const float back = f8e4m3_to_f32(code) * scale;
          EXPECT_LE(std::fabs(back - x), std::max(std::fabs(x) * 0x1p-4f, scale * 0x1p-10f))
              << "row " << t << " head " << h << " element " << i << ": " << x << " read back as "
              << back;
          (*values)[row * width + h * d + i] = back;
        }
      }
    }
  }
  EXPECT_EQ(ks[(capacity + 1) * kv_heads + 1], 1.0f / (448.0f * 512.0f));  // the zero head
  // Attention over the FP8 cache and over its values in f32: the same bits.
  const std::vector<float> q = random(rng, T * heads * d);
  const AttentionShape shape{heads, kv_heads, d, 0};
  std::vector<float> got(T * heads * d, NAN), want(T * heads * d, NAN);
  ASSERT_TRUE(ops->attention(ConstMatrixView::dense(q.data(), DType::kF32, T, heads * d), positions,
                             cache, 1, shape,
                             MatrixView::dense(got.data(), DType::kF32, T, heads * d))
                  .ok());
  const KvCacheView f32_cache{layers,
                              capacity,
                              kv_heads,
                              d,
                              MatrixView::dense(kf.data(), DType::kF32, rows, width),
                              MatrixView::dense(vf.data(), DType::kF32, rows, width)};
  ASSERT_TRUE(ops->attention(ConstMatrixView::dense(q.data(), DType::kF32, T, heads * d), positions,
                             f32_cache, 1, shape,
                             MatrixView::dense(want.data(), DType::kF32, T, heads * d))
                  .ok());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
  // Malformed FP8 caches.
  KvCacheView no_scales = cache;
  no_scales.v_scale = MatrixView();
  const Status missing =
      ops->attention(ConstMatrixView::dense(q.data(), DType::kF32, T, heads * d), positions,
                     no_scales, 1, shape, MatrixView::dense(got.data(), DType::kF32, T, heads * d));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("value cache's scales"), std::string::npos) << missing.message();
  KvCacheView mixed = cache;
  mixed.v = MatrixView::dense(vf.data(), DType::kF32, rows, width);
  const Status mixed_status =
      ops->store_kv(ConstMatrixView::dense(k.data(), DType::kF32, T, width),
                    ConstMatrixView::dense(v.data(), DType::kF32, T, width), positions, mixed, 1);
  ASSERT_FALSE(mixed_status.ok());
  EXPECT_NE(mixed_status.message().find("value cache f32"), std::string::npos)
      << mixed_status.message();
}

TEST(CpuOps, RopeNormsAndSiluMul) {
  auto ops = make_cpu_ops(1);
  std::mt19937 rng(2);
  const int64_t d = 8, half = 4, heads = 2;
  std::vector<float> cos(10 * half), sin(10 * half);
  for (int p = 0; p < 10; ++p) {
    for (int i = 0; i < half; ++i) {
      cos[p * half + i] = std::cos(p * (i + 1) * 0.1f);
      sin[p * half + i] = std::sin(p * (i + 1) * 0.1f);
    }
  }
  const RopeTable table{10, half, ConstMatrixView::dense(cos.data(), DType::kF32, 10, half),
                        ConstMatrixView::dense(sin.data(), DType::kF32, 10, half)};
  // Two rows inside rows of 20 (ld 20): only their first 16 columns move.
  std::vector<float> x = random(rng, 2 * 20);
  const std::vector<float> before = x;
  const std::vector<int32_t> pos = {3, 9};
  ASSERT_TRUE(ops->rope(MatrixView(x.data(), DType::kF32, 2, heads * d, 20), d,
                        ConstMatrixView::dense(pos.data(), DType::kI32, 1, 2), table)
                  .ok());
  for (int t = 0; t < 2; ++t) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < half; ++i) {
        const float a = before[t * 20 + h * d + i], b = before[t * 20 + h * d + i + half];
        const float c = cos[pos[t] * half + i], s = sin[pos[t] * half + i];
        EXPECT_FLOAT_EQ(x[t * 20 + h * d + i], a * c - b * s);
        EXPECT_FLOAT_EQ(x[t * 20 + h * d + i + half], b * c + a * s);
      }
    }
    for (int i = 16; i < 20; ++i) EXPECT_EQ(x[t * 20 + i], before[t * 20 + i]);
  }
  // RMSNorm into bf16, and per head.
  std::vector<float> w = random(rng, 16);
  std::vector<uint16_t> normed(2 * 16);
  ASSERT_TRUE(ops->rms_norm(ConstMatrixView(before.data(), DType::kF32, 2, 16, 20),
                            ConstMatrixView::dense(w.data(), DType::kF32, 1, 16), 1e-5f,
                            MatrixView::dense(normed.data(), DType::kBF16, 2, 16))
                  .ok());
  for (int t = 0; t < 2; ++t) {
    double ss = 0;
    for (int i = 0; i < 16; ++i) ss += double(before[t * 20 + i]) * before[t * 20 + i];
    const double inv = 1.0 / std::sqrt(ss / 16 + 1e-5);
    for (int i = 0; i < 16; ++i) {
      EXPECT_NEAR(bf16_to_f32(normed[t * 16 + i]), w[i] * before[t * 20 + i] * inv,
                  std::abs(w[i] * before[t * 20 + i] * inv) * 8e-3 + 1e-6);
    }
  }
  std::vector<float> g = random(rng, 6), u = random(rng, 6), out(6);
  ASSERT_TRUE(ops->silu_mul(ConstMatrixView::dense(g.data(), DType::kF32, 2, 3),
                            ConstMatrixView::dense(u.data(), DType::kF32, 2, 3),
                            MatrixView::dense(out.data(), DType::kF32, 2, 3))
                  .ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(out[i], g[i] / (1 + std::exp(-double(g[i]))) * u[i], 1e-6);
  }
}

// The ids greedy decoding picks (model/ops.h argmax), against rows whose answers are known by
// construction (argmax_rows.h: ties, NaN, rows without a value above -inf, padding that would
// win).
TEST(CpuOps, ArgmaxIsTheFirstMaximumNanNeverWinning) {
  auto ops = make_cpu_ops(1);
  for (const int64_t cols : {int64_t{10}, int64_t{1003}, int64_t{128256}}) {
    const test_rows::ArgmaxRows r = test_rows::argmax_rows(cols, 3);
    std::vector<int32_t> ids(static_cast<std::size_t>(r.rows), -1);
    ASSERT_TRUE(ops->argmax(ConstMatrixView(r.values.data(), DType::kF32, r.rows, r.cols, r.ld),
                            MatrixView::dense(ids.data(), DType::kI32, 1, r.rows))
                    .ok());
    for (int64_t t = 0; t < r.rows; ++t) {
      EXPECT_EQ(ids[static_cast<std::size_t>(t)], r.expected[static_cast<std::size_t>(t)])
          << "row " << t << " of " << cols;
    }
  }
  std::vector<float> logits(6, 1.0f);
  std::vector<int32_t> ids(3);
  EXPECT_FALSE(ops->argmax(ConstMatrixView::dense(logits.data(), DType::kF32, 2, 3),
                           MatrixView::dense(ids.data(), DType::kI32, 1, 3))
                   .ok());
  EXPECT_FALSE(ops->argmax(ConstMatrixView::dense(logits.data(), DType::kF32, 2, 3),
                           MatrixView::dense(logits.data(), DType::kF32, 1, 2))
                   .ok());
}

TEST(CpuOps, OutOfRangeInputsAreErrors) {
  auto ops = make_cpu_ops(1);
  std::vector<float> table(4 * 3, 1.0f), out(2 * 3);
  const std::vector<int32_t> ids = {1, 4};
  EXPECT_FALSE(ops->embed(ConstMatrixView::dense(table.data(), DType::kF32, 4, 3),
                          ConstMatrixView::dense(ids.data(), DType::kI32, 1, 2),
                          MatrixView::dense(out.data(), DType::kF32, 2, 3))
                   .ok());
}

}  // namespace
}  // namespace qlinear
