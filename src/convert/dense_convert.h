// Unquantized (skipped) layers -> DenseWeights, bytes kept in their stored dtype.
#pragma once

#include <optional>
#include <utility>

#include "convert/canonical.h"
#include "convert/raw_tensor.h"
#include "core/status.h"

namespace qlinear {

struct DenseTensors {
  explicit DenseTensors(RawTensor weight_in, std::optional<RawTensor> bias_in = std::nullopt)
      : weight(std::move(weight_in)), bias(std::move(bias_in)) {}
  RawTensor weight;  // [N, K] F32 / BF16 / F16
  std::optional<RawTensor> bias;
};

Result<DenseWeights> convert_dense(const DenseTensors& tensors);

// Checks that `weight` is a 2-D float tensor [N, K] of F32, BF16 or F16 (dense and online FP8).
Status check_dense_weight(const RawTensor& weight, std::string_view role);

}  // namespace qlinear
