// Dequantizes a tile of output columns [n0, n0 + count) of canonical weights into f32, for the
// blas family: a layer is never widened to float as a whole, only kBlasTileN columns at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "convert/canonical.h"

namespace qlinear {

// Columns per tile: 256 x K floats (4 MiB at K = 4096) stays cache-friendly and small.
inline constexpr int64_t kBlasTileN = 256;

// tile[k * count + j] = W[n0 + j][k]: K rows of `count` (the int weights' [K, N] order).
void dequant_int_tile(const IntWeights& w, int64_t n0, int64_t count, float* tile);
// tile[j * K + k] = W[n0 + j][k]: `count` rows of K (the [N, K] order of fp8 and dense).
void dequant_fp8_tile(const Fp8Weights& w, int64_t n0, int64_t count, float* tile);
void dequant_dense_tile(const DenseWeights& w, int64_t n0, int64_t count, float* tile);

// How a tile of `count` output columns lies in memory.
enum class TileOrder {
  kKMajor,  // [K, count]: W^T rows (int weights)
  kNMajor,  // [count, K]: W rows (fp8, dense)
};

// Writes W's columns [n0, n0 + count) into `scratch` (K * min(N, kBlasTileN) floats) in the
// tile order, or returns weights already in that form; returns where the tile is.
using TileSource = std::function<const float*(int64_t n0, int64_t count, float* scratch)>;

// y [M, N] = x [M, K] * W^T + bias with cblas_sgemm, one tile of kBlasTileN columns at a time
// (OpenBLAS runs its own threads): the blas family's whole method.
void sgemm_by_column_tiles(const float* x, int64_t M, int64_t K, int64_t N, TileOrder order,
                           const TileSource& tile_of, const std::vector<float>& bias, float* y);

}  // namespace qlinear
