// FP8 checkpoints (compressed-tensors float-quantized, quant_method fp8) and online FP8 of a
// dense weight -> Fp8Weights, one unfused layer at a time (docs/reference/formats.md §3-4).
#pragma once

#include <optional>
#include <utility>

#include "convert/canonical.h"
#include "convert/dense_convert.h"
#include "convert/raw_tensor.h"
#include "core/status.h"
#include "quant/quant_spec.h"

namespace qlinear {

struct Fp8Tensors {
  Fp8Tensors(RawTensor weight_in, RawTensor scale_in,
             std::optional<RawTensor> input_scale_in = std::nullopt,
             std::optional<RawTensor> bias_in = std::nullopt)
      : weight(std::move(weight_in)),
        scale(std::move(scale_in)),
        input_scale(std::move(input_scale_in)),
        bias(std::move(bias_in)) {}
  RawTensor weight;  // [N, K] F8_E4M3
  RawTensor scale;   // spec.scale_name: weight_scale, or weight_scale_inv (a multiplier)
  std::optional<RawTensor> input_scale;
  std::optional<RawTensor> bias;
};

// Scale shapes accepted: [] or [1] (per-tensor, expanded to N rows), [N] or [N, 1]
// (per-channel), and for block specs [ceil(N/block_n), ceil(K/block_k)]; dtypes F32/BF16/F16.
Result<Fp8Weights> convert_fp8(const Fp8Spec& spec, const Fp8Tensors& tensors);

// Online FP8 of a dense [N, K] weight, per output channel: s_n = max|W[n, :]| / 448 and
// q = e4m3(W / s_n) (round to nearest even, saturating). An all-zero row gets s_n = 1 (its codes
// are 0 whatever the scale); a row whose s_n would underflow float's normal range uses FLT_MIN.
Result<Fp8Weights> quantize_online_fp8(const Fp8Spec& spec, const DenseTensors& tensors);

}  // namespace qlinear
