// The output epilogue of the native CPU kernels: a row of f32 results (+ bias) written to y in
// the problem's output dtype. f32 is a copy; bf16 and f16 round to nearest even, bit for bit as
// core's f32_to_bf16 / f32_to_f16 (NaN stays NaN), with AVX-512 or AVX2+F16C where the CPU has
// them (checked once per process), so a bf16 output costs no scalar pass over N.
#pragma once

#include <cstdint>

#include "qlinear/dtype.h"

namespace qlinear {

// dst[i] = src[i] + bias[i] (bias may be null) for i < count, in `dtype` (f32, bf16 or f16).
void store_output(const float* src, const float* bias, int64_t count, DType dtype, void* dst);

}  // namespace qlinear
