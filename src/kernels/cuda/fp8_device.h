// The FP8 device code's internal API for the W8A8 kernel and the device tests (no CUDA types, so
// plain C++ tests can call it): the fused dynamic activation quantizer and the probe of
// cuBLASLt's block-scale layouts.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "kernels/device_context.h"
#include "qlinear/dtype.h"
#include "quant/quant_spec.h"

namespace qlinear::cuda_fp8 {

// Floats of scratch quantize() needs.
int64_t quantize_scratch_floats(ActQuant kind, int64_t M);

// Quantizes x [M, K] (f32 / bf16 / f16, row stride ldx, device memory) on `stream` into codes
// [M, K] (row stride K) and scales, bit for bit what quantize_activations_into() computes
// (kernels/common/activation_quant.h). Scales:
//   dynamic per-token             scales[m]
//   dynamic / static per-tensor   scales[0], and also scales[0..M) when `replicate` (an outer
//                                 vector for cuBLASLt's per-row scaling)
//   dynamic per-group             group_k columns per scale: scales[m * G + g], or scales[g * M +
//   m]
//                                 when `group_major` (cuBLASLt's 1x128 layout)
Status quantize(const void* x, int64_t ldx, DType dtype, int64_t M, int64_t K, ActQuant kind,
                float static_scale, int64_t group_k, bool group_major, bool replicate,
                uint8_t* codes, float* scales, float* scratch, void* stream);

// Which scale layouts cuBLASLt's 128x128 (weights) x 1x128 (activations) block scaling uses on
// this device, found by running a small GEMM in each candidate layout against a host reference:
// "act=<m-fastest|k-fastest> weight-ld=<exact|round4>" of the first match, or an error naming
// each candidate's relative error (or cuBLASLt's refusal).
Result<std::string> probe_block_scale_layout(DeviceContext& device);

}  // namespace qlinear::cuda_fp8
