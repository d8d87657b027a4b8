// Dequantizes a tile of output columns [n0, n0 + count) of canonical weights into f32, for the
// blas family: a layer is never widened to float as a whole, only kBlasTileN columns at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "convert/canonical.h"
#include "kernels/cpu/output_store.h"
#include "qlinear/view.h"

namespace qlinear {

// Columns per tile: 256 x K floats (4 MiB at K = 4096) stays cache-friendly and small.
inline constexpr int64_t kBlasTileN = 256;

// tile[k * count + j] = W[n0 + j][k]: K rows of `count` (the int weights' [K, N] order).
void dequant_int_tile(const IntWeights& w, int64_t n0, int64_t count, float* tile);
// tile[j * K + k] = W[n0 + j][k]: `count` rows of K (the [N, K] order of fp8 and dense).
void dequant_fp8_tile(const Fp8Weights& w, int64_t n0, int64_t count, float* tile);
void dequant_dense_tile(const DenseWeights& w, int64_t n0, int64_t count, float* tile);

// out [M, count] (row stride ldc) = x [M, K] * (tile [K, count] when k_major, else tile
// [count, K]^T), by cblas_sgemm.
void sgemm_rows(const float* x, int64_t M, int64_t K, const float* tile, int64_t count,
                bool k_major, float* out, int64_t ldc);

// How a tile of `count` output columns lies in memory.
enum class TileOrder {
  kKMajor,  // [K, count]: W^T rows (int weights)
  kNMajor,  // [count, K]: W rows (fp8, dense)
};

// y [M, N] = x [M, K] * W^T + bias with cblas_sgemm, one tile of kBlasTileN columns at a time
// (OpenBLAS runs its own threads): the blas family's whole method. `tile_of(n0, count, scratch)`
// writes W's columns [n0, n0 + count) into `scratch` (K * kBlasTileN floats) in the tile order,
// or returns weights already in that form, and returns where the tile is. An f32 y is written by
// sgemm in place; other dtypes go through `ytmp` (M * kBlasTileN floats; null for f32 y).
template <class TileOf>
void sgemm_by_column_tiles(const float* x, int64_t M, int64_t K, int64_t N, TileOrder order,
                           TileOf&& tile_of, const std::vector<float>& bias, MatrixView y,
                           float* scratch, float* ytmp) {
  const bool k_major = order == TileOrder::kKMajor;
  const bool f32 = y.dtype() == DType::kF32;
  const int64_t elem = static_cast<int64_t>(y.element_bytes());
  for (int64_t n0 = 0; n0 < N; n0 += kBlasTileN) {
    const int64_t count = std::min(kBlasTileN, N - n0);
    const float* tile = tile_of(n0, count, scratch);
    float* out = f32 ? static_cast<float*>(y.row(0)) + n0 : ytmp;
    const int64_t ldc = f32 ? y.ld() : count;
    // out = x [M, K] * (tile [K, count], or tile [count, K]^T)
    sgemm_rows(x, M, K, tile, count, k_major, out, ldc);
    const float* b = bias.empty() ? nullptr : bias.data() + n0;
    if (f32 && b == nullptr) continue;  // sgemm wrote y itself
    for (int64_t m = 0; m < M; ++m) {
      auto* dst = static_cast<std::byte*>(y.row(m)) + n0 * elem;
      store_output(out + m * ldc, b, count, y.dtype(), dst);
    }
  }
}

}  // namespace qlinear
