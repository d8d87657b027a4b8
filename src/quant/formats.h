// Per-format parsers behind parse_quant_config_json (one .cc per format) and the QuantSpec
// builders they share. Internal to src/quant/.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "quant/config_fields.h"
#include "quant/quant_spec.h"
#include "quant/tensor_catalog.h"

namespace qlinear::quant_internal {

struct ParseInput {
  const Json& qc;           // the quantization config object
  std::string_view source;  // "config.json:quantization_config", for messages
  const TensorCatalog& tensors;
  std::string quant_method;  // lower-cased; "" for legacy files without one
};

Result<std::unique_ptr<QuantConfig>> parse_awq(const ParseInput& in);
Result<std::unique_ptr<QuantConfig>> parse_gptq(const ParseInput& in);
Result<std::unique_ptr<QuantConfig>> parse_autoround(const ParseInput& in);
Result<std::unique_ptr<QuantConfig>> parse_compressed_tensors(const ParseInput& in);
Result<std::unique_ptr<QuantConfig>> parse_fp8(const ParseInput& in);
std::unique_ptr<QuantConfig> make_unquantized_config();
// Online FP8 of an unquantized checkpoint (--quantization fp8).
Result<std::unique_ptr<QuantConfig>> make_online_fp8_config(const QuantOptions& options);

// Spec builders: every parser reports layers through these.
QuantSpec dense_spec(std::string_view layer, QuantFormat format, std::string reason);
QuantSpec int_quant_spec(std::string_view layer, QuantFormat format, const IntSpec& spec);
QuantSpec fp8_quant_spec(std::string_view layer, QuantFormat format, const Fp8Spec& spec);

// "bits=4 group=128 sym" style text of an IntSpec, shared by summaries.
std::string describe_int_spec(const IntSpec& spec);

}  // namespace qlinear::quant_internal
