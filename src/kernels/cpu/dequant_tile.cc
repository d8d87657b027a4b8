#include "kernels/cpu/dequant_tile.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <memory>

#include "kernels/common/kernel_io.h"
#include "qlinear/dtype.h"

namespace qlinear {

namespace {

// e4m3fn code -> float, decoded once.
const std::array<float, 256>& fp8_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = f8e4m3_to_f32(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}

}  // namespace

void dequant_int_tile(const IntWeights& w, int64_t n0, int64_t count, float* tile) {
  const int pf = w.pack_factor();
  const uint32_t mask = (1u << w.bits) - 1u;
  const float implicit_zero = static_cast<float>(1u << (w.bits - 1));
  const int64_t N = w.N;
  for (int64_t r = 0; r < w.K / pf; ++r) {
    for (int i = 0; i < pf; ++i) {
      const int64_t k = r * pf + i;
      const int64_t g = w.g_idx.empty() ? k / w.group_size : w.g_idx[k];
      const float* scales = w.scales.data() + g * N;
      const uint8_t* zeros = w.zeros.empty() ? nullptr : w.zeros.data() + g * N;
      const uint32_t* words = w.qweight.data() + r * N;
      float* out = tile + k * count;
      for (int64_t j = 0; j < count; ++j) {
        const int64_t n = n0 + j;
        const float code = static_cast<float>((words[n] >> (w.bits * i)) & mask);
        const float zero = zeros == nullptr ? implicit_zero : static_cast<float>(zeros[n]);
        out[j] = (code - zero) * scales[n];
      }
    }
  }
}

void dequant_fp8_tile(const Fp8Weights& w, int64_t n0, int64_t count, float* tile) {
  const auto& decode = fp8_table();
  const int64_t K = w.K;
  const int64_t k_blocks = w.is_block() ? (K + w.block_k - 1) / w.block_k : 0;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t n = n0 + j;
    const uint8_t* codes = w.qweight.data() + n * K;
    float* out = tile + j * K;
    if (w.is_block()) {
      const float* scales = w.scale.data() + (n / w.block_n) * k_blocks;
      for (int64_t k = 0; k < K; ++k) out[k] = decode[codes[k]] * scales[k / w.block_k];
    } else {
      const float s = w.scale[n];
      for (int64_t k = 0; k < K; ++k) out[k] = decode[codes[k]] * s;
    }
  }
}

void dequant_dense_tile(const DenseWeights& w, int64_t n0, int64_t count, float* tile) {
  const std::size_t row_bytes = static_cast<std::size_t>(w.K) * dtype_size(w.dtype);
  convert_to_f32(w.data.data() + static_cast<std::size_t>(n0) * row_bytes, w.dtype,
                 static_cast<std::size_t>(count * w.K), tile);
}

void sgemm_rows(const float* x, int64_t M, int64_t K, const float* tile, int64_t count,
                bool k_major, float* out, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, k_major ? CblasNoTrans : CblasTrans,
              static_cast<blasint>(M), static_cast<blasint>(count), static_cast<blasint>(K), 1.0f,
              x, static_cast<blasint>(K), tile, static_cast<blasint>(k_major ? count : K), 0.0f,
              out, static_cast<blasint>(ldc));
}

}  // namespace qlinear
