// cpu_attention::attend (one KV head, its query heads together) against softmax attention in
// double, for every form this CPU runs (portable, AVX2, AVX-512): head sizes with and without
// 16- and 8-element tails (16, 20, 72, 128), groups of 1 to 9 query heads (past the 8 kept in
// flight together), key ranges inside one block and across several, every cache dtype (f32, bf16,
// f16, FP8 with per-row scales). And the vector forms of SiLU * mul and RMSNorm over long rows with
// a tail, SiLU with extreme inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "model/cpu_attention.h"
#include "model/ops.h"
#include "model/vector_form.h"
#include "qlinear/dtype.h"

namespace qlinear {
namespace {

std::vector<VectorForm> forms_here() {
  std::vector<VectorForm> forms;
  for (VectorForm f : {VectorForm::kPortable, VectorForm::kAvx2, VectorForm::kAvx512}) {
    if (cpu_runs(f)) forms.push_back(f);
  }
  return forms;
}

// Rows of keys or values of one KV head in `dtype`, with the f32 values they stand for.
struct Rows {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // [rows][d], as the cache holds them
  std::vector<float> scales;  // FP8: one per row
  int64_t stride = 0;         // bytes per row (the head is padded to 3 heads' width, as in a cache)
};

Rows make_rows(std::mt19937& rng, DType dtype, int64_t rows, int64_t d) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Rows r;
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  r.stride = 3 * d * elem;
  r.bytes.assign(static_cast<std::size_t>(rows * r.stride), std::byte{0x7F});
  r.values.resize(static_cast<std::size_t>(rows * d));
  for (int64_t p = 0; p < rows; ++p) {
    const float scale = 0.01f * static_cast<float>(1 + p % 7);
    if (dtype == DType::kF8E4M3) r.scales.push_back(scale);
    for (int64_t i = 0; i < d; ++i) {
      std::byte* at = r.bytes.data() + p * r.stride + i * elem;
      float v = normal(rng);
      if (dtype == DType::kF32) {
        std::memcpy(at, &v, 4);
      } else if (dtype == DType::kBF16) {
        const uint16_t b = f32_to_bf16(v);
        std::memcpy(at, &b, 2);
        v = bf16_to_f32(b);
      } else if (dtype == DType::kF16) {
        const uint16_t h = f32_to_f16(v);
        std::memcpy(at, &h, 2);
        v = f16_to_f32(h);
      } else {
        uint8_t code = 0;
        do {
          code = static_cast<uint8_t>(rng());
        } while ((code & 0x7F) == 0x7F);  // not NaN
        std::memcpy(at, &code, 1);
        v = f8e4m3_to_f32(code) * scale;
      }
      r.values[static_cast<std::size_t>(p * d + i)] = v;
    }
  }
  return r;
}

TEST(CpuAttention, EveryFormMatchesSoftmaxInDouble) {
  std::mt19937 rng(7);
  const std::vector<VectorForm> forms = forms_here();
  int cases = 0;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
    for (int64_t d : {int64_t{16}, int64_t{20}, int64_t{72}, int64_t{128}}) {
      for (int64_t heads : {int64_t{1}, int64_t{4}, int64_t{9}}) {
        for (auto [first, last] : {std::pair<int64_t, int64_t>{0, 0}, {0, 31}, {5, 37}, {0, 99}}) {
          const Rows k = make_rows(rng, dtype, last + 1, d);
          const Rows v = make_rows(rng, dtype, last + 1, d);
          std::normal_distribution<float> normal(0.0f, 1.0f);
          std::vector<float> q(static_cast<std::size_t>(heads * d));
          for (float& x : q) x = normal(rng);
          cpu_attention::KvHead kv;
          kv.k = k.bytes.data();
          kv.v = v.bytes.data();
          kv.k_stride = k.stride;
          kv.v_stride = v.stride;
          kv.dtype = dtype;
          if (dtype == DType::kF8E4M3) {
            kv.k_scale = k.scales.data();
            kv.v_scale = v.scales.data();
            kv.scale_stride = 1;
          }
          const float scale = 1.0f / std::sqrt(static_cast<float>(d));
          std::vector<std::vector<float>> outs;
          for (VectorForm form : forms) {
            std::vector<float> out(q.size(), NAN);
            cpu_attention::attend(q.data(), heads, d, kv, first, last, scale, out.data(), form);
            outs.push_back(out);
          }
          for (int64_t g = 0; g < heads; ++g) {
            std::vector<double> s;
            double m = -1e300;
            for (int64_t j = first; j <= last; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i) {
                dot += double(q[g * d + i]) * k.values[static_cast<std::size_t>(j * d + i)];
              }
              s.push_back(dot * scale);
              m = std::max(m, s.back());
            }
            double z = 0;
            for (double& e : s) z += (e = std::exp(e - m));
            for (int64_t i = 0; i < d; ++i) {
              double want = 0;
              double mag = 0;
              for (int64_t j = first; j <= last; ++j) {
                const double vj = v.values[static_cast<std::size_t>(j * d + i)];
                want += s[j - first] / z * vj;
                mag += s[j - first] / z * std::abs(vj);
              }
              for (std::size_t f = 0; f < outs.size(); ++f) {
                ASSERT_NEAR(outs[f][g * d + i], want, 2e-6 * (mag + 1e-3) * 16)
                    << dtype_name(dtype) << " d " << d << " heads " << heads << " keys " << first
                    << ".." << last << " head " << g << " i " << i << " "
                    << vector_form_name(forms[f]);
              }
            }
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 4 * 3 * 4);
  for (VectorForm form : forms) std::cout << "[ cpu      ] form " << vector_form_name(form) << "\n";
}

// A key's score does not depend on where it sits in its block: the AVX2 form scores four keys at
// once and the rest one by one, and both must reduce each dot in the same order. Every key row is
// the same random row, so every score must be the same float, every weight exactly exp(0) = 1,
// and with value row j one-hot at element j every output element j < n the same 1 / n. Key ranges
// of 1 to 11 keys (four-key groups plus remainders of 0 to 3) and of 37 (a block of 32 and one of
// 5), from offsets 0 and 29, head sizes with and without tails, every form this CPU runs.
TEST(CpuAttention, EqualKeysGetEqualWeightsWhereverTheySitInABlock) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t d : {int64_t{16}, int64_t{20}, int64_t{64}, int64_t{72}}) {
    std::vector<float> q(static_cast<std::size_t>(2 * d));
    for (float& x : q) x = normal(rng);
    std::vector<float> key_row(static_cast<std::size_t>(d));
    for (float& x : key_row) x = normal(rng);
    const int64_t rows = 29 + 37;
    std::vector<float> keys(static_cast<std::size_t>(rows * d));
    std::vector<float> values(static_cast<std::size_t>(rows * d), 0.0f);
    for (int64_t p = 0; p < rows; ++p) {
      std::copy(key_row.begin(), key_row.end(), keys.begin() + p * d);
    }
    cpu_attention::KvHead kv;
    kv.k = reinterpret_cast<const std::byte*>(keys.data());
    kv.v = reinterpret_cast<const std::byte*>(values.data());
    kv.k_stride = d * 4;
    kv.v_stride = d * 4;
    kv.dtype = DType::kF32;
    for (int64_t first : {int64_t{0}, int64_t{29}}) {
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 37}) {
        if (n > d) continue;
        std::fill(values.begin(), values.end(), 0.0f);
        for (int64_t j = 0; j < n; ++j) values[static_cast<std::size_t>((first + j) * d + j)] = 1;
        for (VectorForm form : forms_here()) {
          std::vector<float> out(q.size(), NAN);
          cpu_attention::attend(q.data(), 2, d, kv, first, first + n - 1, 0.125f, out.data(), form);
          for (int64_t g = 0; g < 2; ++g) {
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(out[static_cast<std::size_t>(g * d + j)],
                        out[static_cast<std::size_t>(g * d)])
                  << "d " << d << " keys " << first << ".." << first + n - 1 << " head " << g
                  << " element " << j << " " << vector_form_name(form);
            }
            ASSERT_FLOAT_EQ(out[static_cast<std::size_t>(g * d)], 1.0f / static_cast<float>(n));
          }
        }
      }
    }
  }
}

// silu(g) * u over 1003 columns (16-wide: 62 full vectors and a tail of 11; 8-wide: 125 and a tail
// of 3) into f32 and bf16, for every form this CPU runs, and extremes: exp overflowing
// (g = -100: silu 0 * u), g = 100 (exactly g * u), zeros, NaN in (NaN out, quiet in bf16).
TEST(CpuVectorOps, SiluMulMatchesDoubleOnLongRowsAndExtremes) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t n = 1003;
  std::vector<float> g(n), u(n);
  for (int64_t i = 0; i < n; ++i) {
    g[static_cast<std::size_t>(i)] = normal(rng);
    u[static_cast<std::size_t>(i)] = normal(rng);
  }
  g[0] = -100.0f;
  g[1] = 100.0f;
  g[2] = 0.0f;
  g[3] = std::numeric_limits<float>::quiet_NaN();
  g[999] = -88.0f;
  g[1002] = std::numeric_limits<float>::quiet_NaN();  // in the 8-wide tail
  for (VectorForm form : forms_here()) {
    SCOPED_TRACE(std::string(vector_form_name(form)));
    auto ops = make_cpu_ops(1, form);
    std::vector<float> out(n + 1, -1.0f);  // one past the row: never written
    std::vector<uint16_t> out16(n + 1, 0xABCD);
    const ConstMatrixView gv = ConstMatrixView::dense(g.data(), DType::kF32, 1, n);
    const ConstMatrixView uv = ConstMatrixView::dense(u.data(), DType::kF32, 1, n);
    ASSERT_TRUE(ops->silu_mul(gv, uv, MatrixView::dense(out.data(), DType::kF32, 1, n)).ok());
    ASSERT_TRUE(ops->silu_mul(gv, uv, MatrixView::dense(out16.data(), DType::kBF16, 1, n)).ok());
    EXPECT_EQ(out[n], -1.0f);
    EXPECT_EQ(out16[n], 0xABCD);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (std::isnan(g[k])) {
        EXPECT_TRUE(std::isnan(out[k]));
        EXPECT_TRUE(std::isnan(bf16_to_f32(out16[k])));
        EXPECT_NE(out16[k] & 0x40, 0) << "a quiet NaN";
        continue;
      }
      const double want = double(g[k]) / (1.0 + std::exp(-double(g[k]))) * u[k];
      EXPECT_NEAR(out[k], want, 4e-7 * std::abs(want) + 1e-30) << "column " << i;
      // bf16: the f32 result rounded to nearest: within half a bf16 step of the f32 one.
      EXPECT_NEAR(bf16_to_f32(out16[k]), out[k], std::abs(out[k]) * 0x1p-8 + 1e-30) << i;
      EXPECT_EQ(out16[k], f32_to_bf16(out[k])) << "column " << i << " rounds as f32_to_bf16";
    }
  }
}

// RMSNorm of two 1003-wide rows (tails of 11 and 3) into f32 and bf16, for every form this CPU
// runs: w * (x * inv) with the f64 inverse, the bf16 row the f32 one rounded as f32_to_bf16.
TEST(CpuVectorOps, RmsNormRowsMatchDoubleAndRoundAsF32ToBf16) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t n = 1003;
  std::vector<float> x(2 * n), w(n);
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = normal(rng);
  for (VectorForm form : forms_here()) {
    SCOPED_TRACE(std::string(vector_form_name(form)));
    auto ops = make_cpu_ops(1, form);
    std::vector<float> out(2 * n, -1.0f);
    std::vector<uint16_t> out16(2 * n, 0);
    const ConstMatrixView xv = ConstMatrixView::dense(x.data(), DType::kF32, 2, n);
    const ConstMatrixView wv = ConstMatrixView::dense(w.data(), DType::kF32, 1, n);
    ASSERT_TRUE(
        ops->rms_norm(xv, wv, 1e-5f, MatrixView::dense(out.data(), DType::kF32, 2, n)).ok());
    ASSERT_TRUE(
        ops->rms_norm(xv, wv, 1e-5f, MatrixView::dense(out16.data(), DType::kBF16, 2, n)).ok());
    for (int64_t t = 0; t < 2; ++t) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[t * n + i]) * x[t * n + i];
      const auto inv = static_cast<float>(1.0 / std::sqrt(ss / n + 1e-5f));
      for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(t * n + i);
        const float want = w[static_cast<std::size_t>(i)] * (x[k] * inv);
        EXPECT_NEAR(out[k], want, std::abs(want) * 3e-7f) << t << " " << i;
        EXPECT_EQ(out16[k], f32_to_bf16(out[k])) << t << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace qlinear
