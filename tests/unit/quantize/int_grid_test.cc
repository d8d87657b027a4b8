// The integer grid: min-max parameters by hand, and the clipping search never worse than
// min-max.
#include "quantize/int_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quantize/fp8_grid.h"

namespace qlinear::quantize {
namespace {

TEST(IntGrid, MinMaxByHand) {
  const std::vector<double> w = {-0.75, 0.0, 0.25, 1.5};
  IntGrid sym{4, true, DType::kF32, false};
  GroupParams p = minmax_params(w.data(), 4, 1, sym);
  EXPECT_DOUBLE_EQ(p.scale, static_cast<float>(3.0 / 15));  // 2 * 1.5 / 15
  EXPECT_EQ(p.zero, 8u);
  IntGrid asym{4, false, DType::kF32, false};
  p = minmax_params(w.data(), 4, 1, asym);
  EXPECT_DOUBLE_EQ(p.scale, static_cast<float>(2.25 / 15));
  EXPECT_EQ(p.zero, 5u);  // round(0.75 / 0.15)
  EXPECT_EQ(quantize_code(1.5, p, 15), 15u);
  EXPECT_EQ(quantize_code(-0.75, p, 15), 0u);
  // GPTQ v1 cannot store zero point 0: all-positive groups get zero 1.
  const std::vector<double> pos = {0.1, 0.2, 0.3};
  IntGrid v1{4, false, DType::kF16, true};
  EXPECT_EQ(minmax_params(pos.data(), 3, 1, v1).zero, 1u);
  EXPECT_EQ(minmax_params(pos.data(), 3, 1, asym).zero, 0u);
}

TEST(IntGrid, ScalesAreStoredValues) {
  const std::vector<double> w = {0.123456, -0.0321};
  for (DType d : {DType::kF16, DType::kBF16}) {
    const GroupParams p = minmax_params(w.data(), 2, 1, IntGrid{4, true, d, false});
    const auto f = static_cast<float>(p.scale);
    const float stored = d == DType::kF16 ? f16_to_f32(f32_to_f16(f)) : bf16_to_f32(f32_to_bf16(f));
    EXPECT_EQ(f, stored);
  }
  // An all-zero group still gets a positive scale.
  const std::vector<double> z(4, 0.0);
  EXPECT_GT(minmax_params(z.data(), 4, 1, IntGrid{}).scale, 0.0);
}

TEST(ClipSearch, NeverWorseThanMinMax) {
  std::mt19937_64 rng(7);
  std::student_t_distribution<double> heavy(3.0);  // outliers make clipping pay
  std::uniform_real_distribution<double> imp(0.0, 4.0);
  double total_minmax = 0;
  double total_search = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = trial % 2 ? 32 : 128;
    std::vector<double> w(static_cast<size_t>(n)), importance(static_cast<size_t>(n));
    for (double& v : w) v = 0.02 * heavy(rng);
    for (double& v : importance) v = imp(rng);
    const IntGrid grid{trial % 3 == 0 ? 8 : 4, trial % 4 < 2, DType::kF16, trial % 5 == 0};
    const double* weights = trial % 2 ? importance.data() : nullptr;
    const GroupParams mm = minmax_params(w.data(), n, 1, grid);
    const GroupParams best = search_params(w.data(), weights, n, 1, grid);
    const double e_mm = group_error(w.data(), weights, n, 1, mm, grid.maxq());
    const double e_best = group_error(w.data(), weights, n, 1, best, grid.maxq());
    EXPECT_LE(e_best, e_mm) << "trial " << trial;
    total_minmax += e_mm;
    total_search += e_best;
  }
  EXPECT_LT(total_search, 0.9 * total_minmax);
}

TEST(Fp8Grid, AbsmaxScalesAndNoSaturation) {
  std::vector<double> w = {0.5, -2.0, 1.0, 0.25, 0.0, 0.0, 0.0, 0.0};  // [2, 4]
  Fp8Layer q = fp8_quantize(w, 2, 4, Fp8WeightGranularity::kChannel, 0, 0, DType::kBF16);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_GE(q.scales[0] * 448.0, 2.0);  // rounded up: -2.0 does not saturate
  EXPECT_EQ(q.scales[1], 1.0);          // an all-zero row
  EXPECT_NEAR(q.dequant[1], -2.0, 2.0 / 16);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_LE(std::fabs(q.dequant[i] - w[i]), std::fabs(w[i]) / 16 + q.scales[i / 4] / 512);
  }
}

}  // namespace
}  // namespace qlinear::quantize
