// The one FP8 activation quantizer every kernel must match bit for bit
// (docs/reference/formats.md §4.3, "One contract for qlinear").
//
// Rules (F = 448, floor = 1/(F*512)):
//   dynamic per-token   s_m = max(max_k |x[m,k]| / F, floor); q = RNE(clamp(x / s_m, ±F))
//   dynamic per-group   as per-token, over each run of group_k columns of a row (last one ragged)
//   dynamic per-tensor  s = max(max |x| / F, floor);          q = RNE(clamp(x * (1/s), ±F))
//   static per-tensor   s = the checkpoint's input_scale;     q = RNE(clamp(x * (1/s), ±F))
// Per-token and per-group divide ("to match FBGEMM"); per-tensor and static multiply by the
// float reciprocal, as vLLM's scaled_fp8_quant does. All arithmetic is float32; RNE and the
// clamp are core/dtype.h f32_to_f8e4m3. Dequantized, an activation is code * s.
#pragma once

#include <cstdint>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "kernels/problem.h"
#include "quant/quant_spec.h"

namespace qlinear {

inline constexpr float kFp8ActScaleFloor = 1.0f / (448.0f * 512.0f);
// Activation group width for kDynamicGroup when the weights are not block-quantized.
inline constexpr int64_t kDefaultActGroupK = 128;

struct QuantizedActivations {
  ActQuant kind = ActQuant::kNone;
  int64_t M = 0;
  int64_t K = 0;
  int64_t group_k = 0;         // columns sharing one scale: K, or the group width (kDynamicGroup)
  std::vector<uint8_t> codes;  // [M, K] e4m3fn
  // kDynamicToken: [M]; kDynamicGroup: [M, ceil(K/group_k)]; kDynamicTensor, kStaticTensor: [1]
  std::vector<float> scales;

  int64_t groups_per_row() const { return (K + group_k - 1) / group_k; }
  float scale(int64_t m, int64_t k) const;
};

// Quantizes x [M, K] (row-major f32). `static_scale` is used by kStaticTensor only (must be
// finite and > 0); `group_k` by kDynamicGroup only (> 0). kNone is an error.
Result<QuantizedActivations> quantize_activations(const float* x, int64_t M, int64_t K,
                                                  ActQuant kind, float static_scale = 0.0f,
                                                  int64_t group_k = 0);
// The scales a quantization of [M, K] by `kind` has (QuantizedActivations::scales.size()).
int64_t activation_scale_count(ActQuant kind, int64_t M, int64_t K, int64_t group_k);
// The same quantization into caller buffers (kernels run without allocating): codes [M, K],
// scales [activation_scale_count(kind, M, K, group_k)].
Status quantize_activations_into(const float* x, int64_t M, int64_t K, ActQuant kind,
                                 float static_scale, int64_t group_k, uint8_t* codes,
                                 float* scales);
// The scale of element (m, k) in a `scales` array laid out as quantize_activations_into writes it.
float activation_scale_at(ActQuant kind, const float* scales, int64_t K, int64_t group_k, int64_t m,
                          int64_t k);

// out[m, k] = f8e4m3_to_f32(code) * scale(m, k), in float (what a BLAS path multiplies).
void dequantize_activations(const QuantizedActivations& q, float* out);

// The activation quantization a W8A8 run of `problem` uses. The checkpoint's kind, except that a
// weight-only checkpoint forced to W8A8 (kNone) quantizes dynamically per token, or per group of
// block_k for block weights (as vLLM's block-FP8 path does).
ActQuant w8a8_act_quant(const LinearProblem& problem);
// Group width for kDynamicGroup: the weights' block_k, else kDefaultActGroupK.
int64_t w8a8_act_group_k(const LinearProblem& problem);

// --- int8 activations of integer-weight layers (--int8-activations: W4A8 / W8A8 int) ---
//
// Symmetric and dynamic, one scale per row and weight group (the columns k with the same
// group_of(k); for channelwise weights, the whole row):
//   s = max(max |x| / 127, kInt8ActScaleFloor);  q = RNE(x / s), |q| <= 127
// in float32 (RNE as std::nearbyint in the default rounding mode). Dequantized: q * s. Every
// kernel of the mode matches this bit for bit (the SIMD ones divide and round the same way).
inline constexpr float kInt8ActScaleFloor = 1e-30f;

struct Int8Activations {
  int64_t M = 0;
  int64_t K = 0;
  int64_t groups = 0;
  std::vector<int8_t> codes;  // [M, K]
  std::vector<float> scales;  // [M, groups]
};

// Quantizes x [M, K] (row-major f32); group_of_k[k] in [0, groups) names each column's group.
Int8Activations quantize_int8_activations(const float* x, int64_t M, int64_t K,
                                          const std::vector<int32_t>& group_of_k, int64_t groups);
// The same into caller buffers: codes [M, K], scales [M, groups]; `absmax` holds `groups` floats
// of scratch.
void quantize_int8_activations_into(const float* x, int64_t M, int64_t K, const int32_t* group_of_k,
                                    int64_t groups, int8_t* codes, float* scales, float* absmax);
// The weight group of every column of `w` (its g_idx, or k / group_size): the groups the int8
// activations of that layer share scales over.
std::vector<int32_t> int8_activation_groups(const IntWeights& w);
// Contiguous groups of `group_size` columns (group_size divides K).
Int8Activations quantize_int8_activations(const float* x, int64_t M, int64_t K, int64_t group_size);
// out[m, k] = q * s, in float.
void dequantize_int8_activations(const Int8Activations& q, const std::vector<int32_t>& group_of_k,
                                 float* out);

// --- int16 activations of the A16 integer kernel on AVX2 (cpu.int.i16.avx2) ---
//
// Not a mode: 16-bit activations stay 16-bit. Symmetric and dynamic, one scale per row and
// block of `block` consecutive columns (the weight group, or a divisor of it, see
// int_i16_avx2.h):
//   s = max(max |x| / 32767, kInt16ActScaleFloor);  q = RNE(x / s), |q| <= 32767
// A block's codes are within s/2 (plus one float division rounding) of x: 2^-16 of the block's
// largest |x|, where a bf16 activation is only within 2^-9 of itself (docs/design.md gives the
// bound on the output). f32 activations add a residual row so they keep f32 accuracy:
//   r = fma(-s, q, x);  s_lo = s * 2^-15;  q_lo = RNE(r / s_lo), |q_lo| <= 32767
// (|r| <= ~s/2, so |q_lo| <= ~16450; x - s*q - s_lo*q_lo is within 2^-31 of the block's max).
// A block holding NaN or infinity gets NaN scales and zero codes (its outputs are NaN). The SIMD
// quantizer matches this bit for bit (same division, RNE conversion, fma and clamp).
inline constexpr float kInt16ActMaxCode = 32767.0f;
inline constexpr float kInt16ActScaleFloor = 1e-30f;
inline constexpr float kInt16ActResidualScale = 1.0f / 32768.0f;  // s_lo / s, a power of two

struct Int16Activations {
  int64_t M = 0;
  int64_t K = 0;
  int64_t block = 0;
  int rows_per_input = 1;      // 1, or 2 with the residual row (row 2m: q, row 2m + 1: q_lo)
  std::vector<int16_t> codes;  // [M * rows_per_input, K]
  std::vector<float> scales;   // [M * rows_per_input, K / block]
};

// Quantizes x [M, K] (row-major f32) in blocks of `block` columns (block divides K), with the
// residual row when `residual`.
Int16Activations quantize_int16_activations(const float* x, int64_t M, int64_t K, int64_t block,
                                            bool residual);
// out[m, k] = sum over the rows of input row m of q * s, in float.
void dequantize_int16_activations(const Int16Activations& q, float* out);

}  // namespace qlinear
