// The activation side of cpu.int.a8.avx2 (int_a8_avx2.cc), declared here for its tests.
//
// --int8-activations on AVX2: each activation row is quantized by the one int8 rule
// (quantize_int8_activations in activation_quant.h: per row and weight group, symmetric) and
// stored as the byte quads of int_a8_tiles.h, which the AVX2 micro-kernel broadcasts per step:
//   4 bits (a word holds rows 8d..8d+7): per step an even quad (x0 x2 x4 x6) and an odd quad
//     (x1 x3 x5 x7), so a row's 8 codes of a run of 8 columns are stored in the byte order
//     0 2 4 6 1 3 5 7;
//   8 bits (a word holds rows 4d..4d+3): one quad (x0 x1 x2 x3) per step: the codes in order.
// A row of K columns is K/4 u32 in either case.
#pragma once

#include <cstdint>

namespace qlinear::int_a8 {

// The quantizer works on runs of 8 columns: group sizes are multiples of it.
inline constexpr int kAvx2ColumnRun = 8;
// The kernel serves M = 1 .. kAvx2MaxRows, decode and prefill up to 128 rows, where it beat the
// OpenBLAS path (quantize-dequantize, sgemm) at every M measured (1.35x at M = 128, one
// thread; bench/results/devvm-avx2-a8-2026-12-02); above it that path runs.
inline constexpr int64_t kAvx2MaxRows = 128;

// Quantizes x [M, K] (f32, groups of group_size contiguous columns, group_size a multiple of
// kAvx2ColumnRun) as quantize_int8_activations(x, M, K, group_size) does, bit for bit, into
// quads [M, K/4] (the byte order of `bits`, above), scales [M, K/group_size] and qsums
// [M, K/group_size] (the sum of each group's codes). On CPUs with AVX2.
void quantize_rows_a8_avx2(const float* x, int64_t M, int64_t K, int64_t group_size, int bits,
                           uint32_t* quads, float* scales, int32_t* qsums);

}  // namespace qlinear::int_a8
