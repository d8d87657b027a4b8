// The activation side of cpu.int.i16.avx2 (int_i16_avx2.cc), declared here for its tests.
//
// Each activation row is quantized to int16 per block of columns (quantize_int16_activations in
// activation_quant.h: the contract) and laid out as the int16 pairs vpmaddwd multiplies with two
// codes of one column. A 32-bit word of the int_tiles layout holds F = 32/bits codes of one
// column (rows F*d .. F*d + F-1); seen as two 16-bit lanes, field i of the low lane is row
// F*d + i and of the high lane row F*d + F/2 + i. So step d has F/2 pairs, pair i =
// (q[F*d + i], q[F*d + F/2 + i]) in the (low, high) halves of a u32:
//   4 bits: (q0,q4) (q1,q5) (q2,q6) (q3,q7);  8 bits: (q0,q2) (q1,q3).
// A row of K columns is K/2 u32 pairs in that order.
#pragma once

#include <cstdint>

namespace qlinear::int_i16 {

// Columns per activation block at most: the int32 accumulator of one block of 8-bit codes stays
// below 2^31 (255 * 32767 * 128 < 2^31; 2^31 / (255 * 32767) = 257).
inline constexpr int64_t kMaxBlock = 128;
// The kernel serves M = 1 .. kMaxRows (decode and small batches); from kAvx2PanelMinRows on the
// f32 panel engine of cpu.w4a16.avx2 / cpu.w8a16.avx2 is faster.
inline constexpr int64_t kMaxRows = 15;
// The quantizer works on runs of 8 columns: group sizes (and so blocks) are multiples of it.
inline constexpr int kColumnRun = 8;

// The activation block of a layer: group_size when it is at most kMaxBlock, else its largest
// divisor that is a multiple of kColumnRun and at most kMaxBlock (channelwise weights: the
// block of K). group_size is a multiple of kColumnRun.
int64_t activation_block(int64_t group_size);

// Quantizes x [M, K] (f32, K a multiple of `block`, block a multiple of kColumnRun) as
// quantize_int16_activations(x, M, K, block, split) does, bit for bit, into R = M (or 2M with
// the residual rows when `split`) rows: pairs [R, K/2] (the pair order of `bits`, above),
// scales [R, K/block] and qsums [R, K/block] (the sum of each block's codes). On CPUs with AVX2.
void quantize_rows_i16_avx2(const float* x, int64_t M, int64_t K, int64_t block, int bits,
                            bool split, uint32_t* pairs, float* scales, int32_t* qsums);

}  // namespace qlinear::int_i16
