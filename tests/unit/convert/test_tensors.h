// Test helpers: in-memory RawTensors and INDEPENDENT reference packers (written from
// docs/reference/formats.md, not from src/convert/packing.h).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "convert/raw_tensor.h"

namespace qlinear::testing {

inline std::string where_of(const std::string& name) {
  return fmt::format("model.safetensors: \"{}\"", name);
}

// The vector must outlive the RawTensor (it holds a span).
template <class T>
RawTensor raw(const std::string& name, DType dtype, Shape shape, const std::vector<T>& values) {
  return RawTensor{where_of(name), dtype, std::move(shape),
                   std::as_bytes(std::span<const T>(values))};
}

// Row-major code matrix [rows, cols] with values in [lo, hi].
inline std::vector<uint32_t> random_codes(int64_t rows, int64_t cols, uint32_t lo, uint32_t hi,
                                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> dist(lo, hi);
  std::vector<uint32_t> q(static_cast<std::size_t>(rows * cols));
  for (auto& v : q) v = dist(rng);
  return q;
}

inline std::vector<float> random_scales(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.001f, 0.1f);
  std::vector<float> s(static_cast<std::size_t>(count));
  for (auto& v : s) v = dist(rng);
  return s;
}

// Packs q [rows, cols] along rows (K): word[r][c] = sum_i q[r*pf + i][c] << bits*i.
inline std::vector<int32_t> pack_along_rows(const std::vector<uint32_t>& q, int64_t rows,
                                            int64_t cols, int bits) {
  const int64_t pf = 32 / bits;
  std::vector<int32_t> out(static_cast<std::size_t>(rows / pf * cols));
  for (int64_t r = 0; r < rows / pf; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t word = 0;
      for (int64_t i = 0; i < pf; ++i) {
        word |= q[static_cast<std::size_t>((r * pf + i) * cols + c)] << (bits * i);
      }
      out[static_cast<std::size_t>(r * cols + c)] = static_cast<int32_t>(word);
    }
  }
  return out;
}

// Packs q [rows, cols] along columns: slot i of word (r, w) holds column w*pf + order[i].
inline std::vector<int32_t> pack_along_cols(const std::vector<uint32_t>& q, int64_t rows,
                                            int64_t cols, int bits, const std::vector<int>& order) {
  const int64_t pf = 32 / bits;
  std::vector<int32_t> out(static_cast<std::size_t>(rows * (cols / pf)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t w = 0; w < cols / pf; ++w) {
      uint32_t word = 0;
      for (int64_t i = 0; i < pf; ++i) {
        word |= q[static_cast<std::size_t>(r * cols + w * pf + order[static_cast<std::size_t>(i)])]
                << (bits * i);
      }
      out[static_cast<std::size_t>(r * (cols / pf) + w)] = static_cast<int32_t>(word);
    }
  }
  return out;
}

inline std::vector<int> sequential_order(int bits) {
  std::vector<int> order(static_cast<std::size_t>(32 / bits));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  return order;
}

// AutoAWQ's pack order (formats.md §1.1).
inline std::vector<int> awq_order(int bits) {
  return bits == 4 ? std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7} : std::vector<int>{0, 2, 1, 3};
}

template <class T>
std::vector<T> transpose(const std::vector<T>& m, int64_t rows, int64_t cols) {
  std::vector<T> t(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
    }
  }
  return t;
}

inline std::vector<uint32_t> as_words(const std::vector<int32_t>& v) {
  return std::vector<uint32_t>(v.begin(), v.end());
}

}  // namespace qlinear::testing
