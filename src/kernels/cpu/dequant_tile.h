// Dequantizes a tile of output columns [n0, n0 + count) of canonical weights into f32, for the
// blas family: a layer is never widened to float as a whole, only kBlasTileN columns at a time.
#pragma once

#include <cstdint>

#include "convert/canonical.h"

namespace qlinear {

// Columns per tile: 256 x K floats (4 MiB at K = 4096) stays cache-friendly and small.
inline constexpr int64_t kBlasTileN = 256;

// tile[k * count + j] = W[n0 + j][k]: K rows of `count` (the int weights' [K, N] order).
void dequant_int_tile(const IntWeights& w, int64_t n0, int64_t count, float* tile);
// tile[j * K + k] = W[n0 + j][k]: `count` rows of K (the [N, K] order of fp8 and dense).
void dequant_fp8_tile(const Fp8Weights& w, int64_t n0, int64_t count, float* tile);
void dequant_dense_tile(const DenseWeights& w, int64_t n0, int64_t count, float* tile);

}  // namespace qlinear
