// Logit rows for the argmax op's tests (cpu_ops_test, cuda_ops_test, opencl_ops_test), with the
// id greedy decoding must pick in each, known by construction: planted maxima (ties at indices
// that different threads or passes of a device kernel scan), NaN that must never win, rows with
// nothing above -inf (0), and padding past each row's columns holding a larger value than any
// (a kernel that reads past the row picks it).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace qlinear::test_rows {

struct ArgmaxRows {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<float> values;  // rows x ld, row-major
  std::vector<int32_t> expected;
};

inline ArgmaxRows argmax_rows(int64_t cols, uint32_t seed) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  ArgmaxRows r;
  r.rows = 8;
  r.cols = cols;
  r.ld = cols + 5;
  r.values.assign(static_cast<std::size_t>(r.rows * r.ld), 1e30f);  // the padding
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  auto at = [&](int64_t row, int64_t i) -> float& {
    return r.values[static_cast<std::size_t>(row * r.ld + i)];
  };
  auto fill = [&](int64_t row, auto value) {
    for (int64_t i = 0; i < cols; ++i) at(row, i) = value(i);
  };
  auto noise = [&](int64_t) { return normal(rng); };
  const int64_t last = cols - 1;
  // 0: a tie between a late index and an earlier one scanned by another thread.
  fill(0, noise);
  at(0, last) = 50.0f;
  at(0, cols / 3 + 1) = 50.0f;
  r.expected.push_back(static_cast<int32_t>(cols / 3 + 1));
  // 1: a tie 1024 apart (one thread's consecutive passes in the CUDA kernel) and 64 apart.
  fill(1, noise);
  const int64_t a = std::min<int64_t>(cols / 2, 7);
  at(1, std::min(last, a + 1024)) = 60.0f;
  at(1, std::min(last, a + 64)) = 60.0f;
  at(1, a) = 60.0f;
  r.expected.push_back(static_cast<int32_t>(a));
  // 2: NaN everywhere but the last column.
  fill(2, [&](int64_t) { return kNan; });
  at(2, last) = -1.0f;
  r.expected.push_back(static_cast<int32_t>(last));
  // 3: nothing above -inf.
  fill(3, [&](int64_t) { return -kInf; });
  r.expected.push_back(0);
  // 4: NaN first and around the maximum.
  fill(4, noise);
  at(4, 0) = kNan;
  at(4, 2) = kNan;
  at(4, 3) = 40.0f;
  at(4, 4) = kNan;
  r.expected.push_back(3);
  // 5: every column equal.
  fill(5, [&](int64_t) { return 2.0f; });
  r.expected.push_back(0);
  // 6: the maximum in the last column alone.
  fill(6, noise);
  at(6, last) = 45.0f;
  r.expected.push_back(static_cast<int32_t>(last));
  // 7: +inf twice among NaN.
  fill(7, [&](int64_t i) { return i % 2 == 0 ? kNan : normal(rng); });
  const int64_t b = std::min<int64_t>(last - 1, cols / 2 | 1);
  at(7, b) = kInf;
  at(7, b + 1) = kInf;
  r.expected.push_back(static_cast<int32_t>(b));
  return r;
}

}  // namespace qlinear::test_rows
