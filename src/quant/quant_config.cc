// parse_quant_config: finds the format of a quantization config (quant_method, or the keys of
// a legacy file without one) and dispatches to its parser; applies --quantization.
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "quant/formats.h"
#include "quant/quant_config_json.h"

namespace qlinear {
namespace {

using quant_internal::Json;
using quant_internal::ParseInput;

constexpr std::string_view kSupportedMethods = "awq, gptq, auto-round, compressed-tensors, fp8";
constexpr std::string_view kAcceptedQuantization = "\"\" (the checkpoint's own) and \"fp8\"";

// Old AutoAWQ and AutoGPTQ files carry no quant_method; their keys tell them apart.
Result<std::string> legacy_method(const Json& qc, std::string_view source) {
  for (const char* key : {"w_bit", "q_group_size", "zero_point", "version"}) {
    if (qc.contains(key)) return std::string("awq");
  }
  if (qc.contains("bits") &&
      (qc.contains("group_size") || qc.contains("desc_act") || qc.contains("sym"))) {
    return std::string("gptq");
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "{}: no \"quant_method\" key and the keys match no legacy AutoAWQ (w_bit, "
                    "q_group_size, zero_point, version) or AutoGPTQ (bits, group_size, desc_act) "
                    "file; supported quant_method values: {}",
                    source, kSupportedMethods);
}

Result<std::unique_ptr<QuantConfig>> dispatch(const ParseInput& in) {
  const std::string& method = in.quant_method;
  if (method == "awq" || method == "awq_marlin" || method == "auto_awq") {
    return quant_internal::parse_awq(in);
  }
  if (method == "gptq" || method == "gptq_marlin" || method == "auto_gptq") {
    return quant_internal::parse_gptq(in);
  }
  if (method == "auto-round" || method == "auto_round" || method == "intel/auto-round" ||
      method == "auto_round:fp8") {
    return quant_internal::parse_autoround(in);
  }
  if (method == "compressed-tensors" || method == "compressed_tensors") {
    return quant_internal::parse_compressed_tensors(in);
  }
  if (method == "fp8") return quant_internal::parse_fp8(in);
  return make_error(ErrorCode::kUnsupported,
                    "{}: \"quant_method\" = \"{}\": unknown quantization method; supported: {}",
                    in.source, method, kSupportedMethods);
}

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_quant_config_json(const Json& qc,
                                                             std::string_view source,
                                                             const TensorCatalog& tensors,
                                                             const QuantOptions& options) {
  const std::string requested = quant_internal::lower_ascii(options.quantization);
  if (!requested.empty() && requested != "fp8") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--quantization \"{}\": unknown value; accepted: {}", options.quantization,
                      kAcceptedQuantization);
  }
  if (qc.is_null()) {
    if (requested == "fp8") return quant_internal::make_online_fp8_config(options);
    return quant_internal::make_unquantized_config();
  }
  if (!qc.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: the quantization config must be a JSON object, got {}", source,
                      quant_internal::json_brief(qc));
  }
  std::string method;
  if (const Json* value = quant_internal::find_any(qc, {"quant_method"})) {
    QL_ASSIGN_OR_RETURN(method, quant_internal::as_string(*value, source, "quant_method"));
    method = quant_internal::lower_ascii(method);
  } else {
    QL_ASSIGN_OR_RETURN(method, legacy_method(qc, source));
  }
  if (requested == "fp8") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--quantization fp8 quantizes an unquantized checkpoint at load, but this "
                      "one is already quantized ({}: quant_method \"{}\"); drop --quantization",
                      source, method);
  }
  return dispatch(ParseInput{qc, source, tensors, method});
}

Result<std::unique_ptr<QuantConfig>> parse_quant_config(const Checkpoint& checkpoint,
                                                        const QuantOptions& options) {
  const TensorCatalog tensors = TensorCatalog::from_checkpoint(checkpoint);
  const std::string source = checkpoint.quant_config_source().empty()
                                 ? checkpoint.dir() + "/config.json"
                                 : checkpoint.quant_config_source();
  return parse_quant_config_json(checkpoint.quant_config_ordered(), source, tensors, options);
}

}  // namespace qlinear
