// The FP8 activation-quantization contract (kernels/common/activation_quant.h, formats.md
// §4.3) in AVX-512, bit for bit: the same scales (amax / 448 floored at 1/(448*512)), the same
// division (per-token, per-group) or reciprocal multiply (per-tensor, static), clamp to +-448 and
// round to nearest even on the e4m3fn grid. The reference quantizer is scalar and costs more
// than the whole GEMM for small N at M >= 64; cpu.fp8.w8a8.avx512 uses this one instead, and a
// test compares the two on every rounding case.
//
// Output: the e4m3fn values as bf16 (exact: at most 4 significant bits), ready for vdpbf16ps,
// and each row's scale per K chunk.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "qlinear/view.h"
#include "quant/quant_spec.h"

namespace qlinear::fp8_cpu {

struct ActQuantRequest {
  ActQuant kind = ActQuant::kDynamicToken;  // not kNone
  float static_scale = 0.0f;                // kStaticTensor: the checkpoint's input_scale (> 0)
  int64_t group_k = 0;                      // kDynamicGroup: columns per scale (> 0)
  int64_t Kp = 0;                           // row stride of `values` (>= K), zero padded
  int64_t chunk_k = 0;                      // columns per chunk scale; divides group_k
};

// x: [M, K] f32/bf16/f16 (host view, any leading dimension). values: [M, Kp] bf16;
// chunk_scales: [M, ceil(K/chunk_k)]. Needs avx512f (the W8A8 kernel's check() asked for it).
Status quantize_activations_avx512(ConstMatrixView x, const ActQuantRequest& request,
                                   uint16_t* values, float* chunk_scales, int threads);

}  // namespace qlinear::fp8_cpu
