// The engine of the int8-activation CPU kernels cpu.w4a8.avx512vnni and cpu.w8a8.avx512vnni
// (--int8-activations only; see activation_quant.h for the one quantization contract).
//
// Weights: the 64-column tiles of int_tiles.h (tile_int_weights, zero offset 0), unchanged codes.
// Activations: x (act-order permuted like the weight rows) quantized per row and weight group to
// int8, packed as the byte quads vpdpbusd multiplies with four codes of one column:
//   4-bit word (rows 8d..8d+7): word & 0x0F0F0F0F holds rows 0,2,4,6 and (word >> 4) & 0x0F0F0F0F
//     rows 1,3,5,7, so each step has an even quad (x0 x2 x4 x6) and an odd quad (x1 x3 x5 x7);
//   8-bit word (rows 4d..4d+3): the word is the four codes, one quad (x0 x1 x2 x3).
// Per group: acc = sum code * xq in int32 (u8 x s8 products), then
//   y += sx * (s * acc - s*z * sum(xq over the group)).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "kernels/cpu/int_tiles.h"
#include "kernels/kernel.h"

namespace qlinear::int_a8 {

// Activation rows of one call.
struct A8Rows {
  int64_t count = 0;
  int quads_per_step = 2;           // 2 for 4-bit weights (even, odd), 1 for 8-bit
  const uint32_t* quads = nullptr;  // [count, steps, quads_per_step] int8 bytes
  const float* scales = nullptr;    // [count, groups] sx
  const float* qsums = nullptr;     // [count, groups] sum of the int8 codes over the group
};

// Rows [r0, r1) of one tile, accumulated into ytile (64 floats per row, zeroed by the caller).
void tile_job_vnni(const int_tiles::TiledWeights& w, const A8Rows& rows, int64_t tile, int64_t r0,
                   int64_t r1, float* ytile);

// quantize_int8_activations (activation_quant.h) of rows [m0, m1) of x [M, K] with contiguous
// groups of group_size columns, with AVX-512 (bit-identical codes and scales: the same float
// division, round-to-nearest-even conversion and clamp); also each group's sum of codes.
// codes [M, K], scales and qsums [M, K / group_size].
void quantize_rows_avx512(const float* x, int64_t m0, int64_t m1, int64_t K, int64_t group_size,
                          int8_t* codes, float* scales, float* qsums);

// Largest weight group whose int32 accumulators cannot overflow: |code| * 127 * group < 2^31.
int64_t max_group_for_bits(int bits);

class IntA8Kernel final : public LinearKernel {
 public:
  IntA8Kernel(std::string_view name, int bits) : name_(name), bits_(bits) {}
  std::string_view name() const override { return name_; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }
  Verdict check(const LinearProblem& problem, const Device& device) const override;
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& device) const override;

 private:
  std::string_view name_;
  int bits_;
};

}  // namespace qlinear::int_a8
