// What host kernels of every family share around their math: the canonical weights' internal
// sizes checked in prepare() (so no kernel reads past a vector of a malformed Canonical), reading
// rows of x as f32 and writing rows of y in the output dtype, and the bias epilogue.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "qlinear/view.h"

namespace qlinear {

// The weights of `weights` when they hold that scheme and their sizes agree with each other.
Result<const IntWeights*> int_weights_of(const Canonical& weights, std::string_view kernel);
Result<const Fp8Weights*> fp8_weights_of(const Canonical& weights, std::string_view kernel);
Result<const DenseWeights*> dense_weights_of(const Canonical& weights, std::string_view kernel);

// out[r * cols + c] = x[first + r, c] as f32 for `count` rows (exact: every bf16 and f16 value is
// a float). x is a host view of f32, bf16 or f16.
void rows_to_f32(ConstMatrixView x, int64_t first, int64_t count, float* out);
// Converts `count` floats to `dtype` (f32, bf16 or f16; round to nearest even) at `dst`.
void store_floats(const float* src, int64_t count, DType dtype, void* dst);
// y[r, c] = src[r * src_ld + c] for every row and column of the host view y, in y's dtype.
void store_rows(const float* src, int64_t src_ld, MatrixView y);

// y[m, n] += bias[n] for a row-major [M, N] float y; nothing when bias is empty.
void add_bias(const std::vector<float>& bias, int64_t M, int64_t N, float* y);

}  // namespace qlinear
