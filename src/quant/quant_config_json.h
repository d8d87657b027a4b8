// The JSON-level entry point behind parse_quant_config(): testable without a checkpoint folder.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string_view>

#include "core/status.h"
#include "quant/quant_spec.h"
#include "quant/tensor_catalog.h"

namespace qlinear {

// `qc` is the quantization config (a JSON null for an unquantized checkpoint); `source` names
// where it came from in messages ("config.json:quantization_config"). ordered_json because
// GPTQ `dynamic` keys are tried in the order they were written.
Result<std::unique_ptr<QuantConfig>> parse_quant_config_json(const nlohmann::ordered_json& qc,
                                                             std::string_view source,
                                                             const TensorCatalog& tensors,
                                                             const QuantOptions& options = {});

}  // namespace qlinear
