#include "kernels/cpu/dequant_tile.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <memory>

#include "core/dtype.h"
#include "kernels/reference/kernel_io.h"

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

void sgemm_by_column_tiles(const float* x, int64_t M, int64_t K, int64_t N, TileOrder order,
                           const TileSource& tile_of, const std::vector<float>& bias, float* y) {
  // Not value-initialised: sources that hand out their own f32 rows never touch its pages.
  const auto scratch = std::make_unique_for_overwrite<float[]>(
      static_cast<std::size_t>(K * std::min(N, kBlasTileN)));
  const bool k_major = order == TileOrder::kKMajor;
  for (int64_t n0 = 0; n0 < N; n0 += kBlasTileN) {
    const int64_t count = std::min(kBlasTileN, N - n0);
    const float* tile = tile_of(n0, count, scratch.get());
    // y[:, n0:n0+count] = x [M, K] * (tile [K, count], or tile [count, K]^T)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, k_major ? CblasNoTrans : CblasTrans,
                static_cast<blasint>(M), static_cast<blasint>(count), static_cast<blasint>(K), 1.0f,
                x, static_cast<blasint>(K), tile, static_cast<blasint>(k_major ? count : K), 0.0f,
                y + n0, static_cast<blasint>(N));
  }
  add_bias(bias, M, N, y);
}

}  // namespace qlinear
