// AWQ, GEMM version (formats.md §1.1): 4-bit codes packed along N with the [0 2 4 6 1 3 5 7]
// interleave. Other versions store other layouts under the same tensor names, so they are
// rejected here, before any shape check could mistake one for the other.
#include <nlohmann/json.hpp>

#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

class AwqConfig final : public QuantConfig {
 public:
  AwqConfig(IntSpec spec, std::vector<std::string> not_convert, bool lm_head,
            const TensorCatalog& tensors, std::string version)
      : spec_(spec),
        not_convert_(std::move(not_convert)),
        lm_head_(lm_head),
        tensors_(tensors),
        version_(std::move(version)) {}

  QuantFormat format() const override { return QuantFormat::kAwq; }

  std::optional<std::string> skip_entry(std::string_view name) const override {
    if (auto entry = find_substring_entry(name, not_convert_)) {
      return "in modules_to_not_convert (substring \"" + *entry + "\")";
    }
    return std::nullopt;
  }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    if (auto reason = skip_entry(layer)) return dense_spec(layer, format(), std::move(*reason));
    const std::string qweight = std::string(layer) + ".qweight";
    if (is_lm_head(layer)) {
      if (lm_head_ || tensors_.has(qweight)) return int_quant_spec(layer, format(), spec_);
      return dense_spec(layer, format(), "LM head: AWQ leaves it unquantized (no lm_head.qweight)");
    }
    // With no skip list, vLLM tells "not converted" layers by their float tensors (§2).
    if (not_convert_.empty() && tensors_.knows_layer(layer) && !tensors_.has(qweight)) {
      auto dtype = tensors_.dtype(std::string(layer) + ".weight");
      if (dtype && dtype_is_float(*dtype)) {
        return dense_spec(
            layer, format(),
            fmt::format("not converted: no qweight, tensors are {}", dtype_name(*dtype)));
      }
    }
    return int_quant_spec(layer, format(), spec_);
  }

  std::string summary() const override {
    return fmt::format("awq bits={} group={} zero_point={} version={}", spec_.bits,
                       spec_.group_size, spec_.sym ? "false" : "true", version_);
  }

 private:
  IntSpec spec_;
  std::vector<std::string> not_convert_;
  bool lm_head_;
  TensorCatalog tensors_;
  std::string version_;
};

// Why each non-GEMM version cannot be read as GEMM data.
Status check_version(const Json& value, std::string_view where) {
  QL_ASSIGN_OR_RETURN(std::string version, as_string(value, where, "version"));
  const std::string lower = lower_ascii(version);
  if (lower == "gemm") return Status::ok_status();
  std::string_view why;
  if (lower == "gemv") {
    why =
        "GEMV stores qweight as [N, K/8] packed sequentially along K and pads scales/qzeros "
        "to [N, G']; only the GEMM layout ([K, N/8], interleaved) is supported";
  } else if (lower == "gemv_fast") {
    why = "gemv_fast uses a private pre-tiled layout; only the GEMM layout is supported";
  } else if (lower == "marlin") {
    why =
        "marlin checkpoints hold pre-repacked Marlin tiles and no qzeros; only the GEMM layout "
        "is supported";
  } else {
    why = "unknown AWQ version; only \"gemm\" (GEMM layout) is supported";
  }
  return bad_value(ErrorCode::kUnsupported, where, "version", value, why);
}

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_awq(const ParseInput& in) {
  const Json& qc = in.qc;
  std::string bits_key;
  const Json* bits_value = find_any(qc, {"bits", "w_bit"}, &bits_key);
  if (bits_value == nullptr) {
    return make_error(ErrorCode::kNotFound,
                      "{}: AWQ config has neither \"bits\" nor \"w_bit\" (the weight width)",
                      in.source);
  }
  QL_ASSIGN_OR_RETURN(int bits, as_int(*bits_value, in.source, bits_key));
  if (bits == 8) {
    return bad_value(ErrorCode::kUnsupported, in.source, bits_key, *bits_value,
                     "8-bit AWQ (interleave [0 2 1 3]) is not loadable: vLLM and qlinear kernels "
                     "read 4-bit AWQ only");
  }
  if (bits != 4) {
    return bad_value(ErrorCode::kUnsupported, in.source, bits_key, *bits_value,
                     "AWQ supports bits=4 only");
  }

  std::string group_key;
  const Json* group_value = find_any(qc, {"group_size", "q_group_size"}, &group_key);
  if (group_value == nullptr) {
    return make_error(ErrorCode::kNotFound,
                      "{}: AWQ config has neither \"group_size\" nor \"q_group_size\"", in.source);
  }
  QL_ASSIGN_OR_RETURN(int group_size, as_int(*group_value, in.source, group_key));
  QL_RETURN_IF_ERROR(check_group_size(group_size, in.source, group_key));

  QL_ASSIGN_OR_RETURN(auto zero_point, read_bool(qc, {"zero_point"}, in.source));
  std::string version = "gemm";
  if (const Json* v = find_any(qc, {"version"})) {
    QL_RETURN_IF_ERROR(check_version(*v, in.source));
    version = lower_ascii(v->get<std::string>());
  }
  QL_ASSIGN_OR_RETURN(auto not_convert, read_name_list(qc, {"modules_to_not_convert"}, in.source));
  QL_ASSIGN_OR_RETURN(auto lm_head, read_bool(qc, {"lm_head"}, in.source));

  IntSpec spec;
  spec.bits = bits;
  spec.group_size = group_size;
  spec.sym = !zero_point.value_or(true);  // AutoAWQ's default is zero_point=true
  spec.act_order = false;
  spec.packing = IntPacking::kAwq;
  spec.sym_from_zero_point = true;
  return std::unique_ptr<QuantConfig>(std::make_unique<AwqConfig>(
      spec, std::move(not_convert), lm_head.value_or(false), in.tensors, std::move(version)));
}

}  // namespace qlinear::quant_internal
