// Integer checkpoints (GPTQ, AWQ gemm, compressed-tensors pack-quantized; AutoRound exports are
// one of the first two) -> IntWeights, one unfused layer at a time. Every rule of
// docs/reference/formats.md §1 that can be checked on the tensors is checked here.
#pragma once

#include <optional>
#include <utility>

#include "convert/canonical.h"
#include "convert/raw_tensor.h"
#include "core/status.h"
#include "quant/quant_spec.h"

namespace qlinear {

// The tensors of one layer under their roles. GPTQ / AWQ names: qweight, qzeros, scales, g_idx;
// compressed-tensors: weight_packed, weight_zero_point, weight_scale, weight_g_idx, weight_shape.
struct IntTensors {
  IntTensors(RawTensor qweight_in, RawTensor scales_in,
             std::optional<RawTensor> qzeros_in = std::nullopt)
      : qweight(std::move(qweight_in)),
        scales(std::move(scales_in)),
        qzeros(std::move(qzeros_in)) {}
  RawTensor qweight;
  RawTensor scales;
  std::optional<RawTensor> qzeros;
  std::optional<RawTensor> g_idx;
  std::optional<RawTensor> weight_shape;  // compressed-tensors only: [N, K] as I64
  std::optional<RawTensor> bias;
};

// The checkpoint's tensor names for each role under `packing` ("qweight" / "weight_packed").
struct IntTensorNames {
  const char* qweight;
  const char* qzeros;
  const char* scales;
  const char* g_idx;
};
IntTensorNames int_tensor_names(IntPacking packing);

// Converts one layer. K and N come from the tensors (weight_shape, g_idx length, scale rows x
// group_size, else the packed qweight); every tensor is then checked against (K, N, bits, group).
Result<IntWeights> convert_int(const IntSpec& spec, const IntTensors& tensors);

}  // namespace qlinear
