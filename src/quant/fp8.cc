// quant_method "fp8" (AutoFP8, DeepSeek-V3/R1, Qwen FP8), formats.md §3.2: per-tensor FP8
// weights with static or dynamic activations, or 2-D blocks with scales in `weight_scale_inv`.
#include <nlohmann/json.hpp>

#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

class Fp8Config final : public QuantConfig {
 public:
  Fp8Config(Fp8Spec spec, std::vector<std::string> ignored, std::string ignored_key,
            const TensorCatalog& tensors)
      : spec_(std::move(spec)),
        ignored_(std::move(ignored)),
        ignored_key_(std::move(ignored_key)),
        tensors_(tensors) {}

  QuantFormat format() const override { return QuantFormat::kFp8; }

  std::optional<std::string> skip_entry(std::string_view name) const override {
    if (auto entry = find_substring_entry(name, ignored_)) {
      return "in " + ignored_key_ + " (substring \"" + *entry + "\")";
    }
    return std::nullopt;
  }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    if (auto reason = skip_entry(layer)) return dense_spec(layer, format(), std::move(*reason));
    if (is_lm_head(layer)) {
      auto dtype = tensors_.dtype(std::string(layer) + ".weight");
      if (!dtype || *dtype != DType::kF8E4M3) {
        return dense_spec(layer, format(), "LM head: no F8_E4M3 lm_head.weight, kept unquantized");
      }
    }
    return fp8_quant_spec(layer, format(), spec_);
  }

  std::string summary() const override {
    return fmt::format("{} {}={} entries", fp8_quant_spec("", format(), spec_).describe(),
                       ignored_key_, ignored_.size());
  }

 private:
  Fp8Spec spec_;
  std::vector<std::string> ignored_;
  std::string ignored_key_;
  TensorCatalog tensors_;
};

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_fp8(const ParseInput& in) {
  const Json& qc = in.qc;
  const Json* scheme_value = find_any(qc, {"activation_scheme"});
  if (scheme_value == nullptr) {
    return make_error(ErrorCode::kNotFound,
                      "{}: FP8 config has no \"activation_scheme\" (expected \"static\" or "
                      "\"dynamic\")",
                      in.source);
  }
  QL_ASSIGN_OR_RETURN(std::string scheme, as_string(*scheme_value, in.source, "activation_scheme"));
  const std::string lower = lower_ascii(scheme);
  if (lower != "static" && lower != "dynamic") {
    return bad_value(ErrorCode::kInvalidArgument, in.source, "activation_scheme", *scheme_value,
                     "must be \"static\" or \"dynamic\"");
  }
  const bool dynamic = lower == "dynamic";

  Fp8Spec spec;
  if (const Json* block = find_any(qc, {"weight_block_size"})) {
    bool valid = block->is_array() && block->size() == 2;
    std::vector<int> extents;
    if (valid) {
      for (const auto& extent : *block) {
        valid = valid && extent.is_number_integer() && extent.get<int64_t>() > 0 &&
                extent.get<int64_t>() <= (1 << 20);
        if (valid) extents.push_back(static_cast<int>(extent.get<int64_t>()));
      }
    }
    if (!valid) {
      return bad_value(ErrorCode::kInvalidArgument, in.source, "weight_block_size", *block,
                       "must be [block_n, block_k] with two positive integers");
    }
    if (!dynamic) {
      return bad_value(ErrorCode::kUnsupported, in.source, "activation_scheme", *scheme_value,
                       "block weights (\"weight_block_size\") need \"dynamic\" activations "
                       "(per-token groups of block_k); static input scales are rejected");
    }
    spec.weight = Fp8WeightGranularity::kBlock;
    spec.block_n = extents[0];
    spec.block_k = extents[1];
    spec.activation = ActQuant::kDynamicGroup;
    spec.scale_name = "weight_scale_inv";  // the dequantization multiplier, despite its name
  } else {
    spec.weight = Fp8WeightGranularity::kTensor;
    spec.activation = dynamic ? ActQuant::kDynamicToken : ActQuant::kStaticTensor;
    spec.scale_name = "weight_scale";
  }

  std::string ignored_key;
  std::vector<std::string> ignored;
  if (const Json* list = find_any(qc, {"ignored_layers", "modules_to_not_convert"}, &ignored_key)) {
    QL_ASSIGN_OR_RETURN(ignored, as_name_list(*list, in.source, ignored_key));
  }
  return std::unique_ptr<QuantConfig>(std::make_unique<Fp8Config>(
      std::move(spec), std::move(ignored), ignored_key.empty() ? "ignored_layers" : ignored_key,
      in.tensors));
}

}  // namespace qlinear::quant_internal
