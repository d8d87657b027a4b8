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

}  // namespace qlinear
