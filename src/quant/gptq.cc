// GPTQ (AutoGPTQ / GPTQModel, formats.md §1.2): K-packed codes, v1 (z-1) or v2 zeros, optional
// act-order, GPTQModel `dynamic` per-module overrides and `modules_in_block_to_quantize`.
#include <nlohmann/json.hpp>

#include "core/escape.h"
#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

struct DynamicRule {
  std::string key;  // as written, prefix included
  bool exclude = false;
  Regex regex;
  std::optional<int> bits;
  std::optional<int> group_size;
  std::optional<bool> desc_act;
  std::optional<bool> sym;
};

// desc_act with channelwise groups is no act-order (AutoGPTQConfig resets it).
bool effective_act_order(bool desc_act, int group_size) { return desc_act && group_size != -1; }

class GptqConfig final : public QuantConfig {
 public:
  GptqConfig(IntSpec spec, bool desc_act, std::vector<DynamicRule> dynamic,
             std::vector<std::string> in_block, bool lm_head, const TensorCatalog& tensors,
             std::string source)
      : spec_(spec),
        desc_act_(desc_act),
        dynamic_(std::move(dynamic)),
        in_block_(std::move(in_block)),
        lm_head_(lm_head),
        tensors_(tensors),
        source_(std::move(source)) {}

  QuantFormat format() const override { return QuantFormat::kGptq; }

  std::optional<std::string> skip_entry(std::string_view name) const override {
    const DynamicRule* rule = first_dynamic_match(name);
    if (rule != nullptr && rule->exclude) {
      return "excluded by dynamic \"" + rule->key + "\"";
    }
    return std::nullopt;
  }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    const std::string qweight = std::string(layer) + ".qweight";
    if (is_lm_head(layer) && !lm_head_) {
      if (tensors_.has(qweight)) {
        return make_error(ErrorCode::kMisconfigured,
                          "{}: \"lm_head\" is false or absent, but the checkpoint has tensor "
                          "\"{}\"; set \"lm_head\": true if the LM head was quantized",
                          source_, qweight);
      }
      return dense_spec(layer, format(), "LM head: GPTQ \"lm_head\" is false or absent");
    }
    const DynamicRule* rule = first_dynamic_match(layer);
    if (rule != nullptr && rule->exclude) {
      return dense_spec(layer, format(), "excluded by dynamic \"" + rule->key + "\"");
    }
    if (!is_lm_head(layer)) {
      if (!in_block_.empty()) {
        if (!find_substring_entry(layer, in_block_)) {
          return dense_spec(layer, format(), "not listed in modules_in_block_to_quantize");
        }
      } else if (tensors_.knows_layer(layer) && !tensors_.has(qweight)) {
        // No list: the tensors decide, as vLLM fills the list from safetensors dtypes.
        return dense_spec(layer, format(), "no qweight tensor (not quantized in the checkpoint)");
      }
    }
    if (rule == nullptr) return int_quant_spec(layer, format(), spec_);

    IntSpec spec = spec_;
    bool desc_act = desc_act_;
    if (rule->bits) spec.bits = *rule->bits;
    if (rule->group_size) spec.group_size = *rule->group_size;
    if (rule->sym) spec.sym = *rule->sym;
    if (rule->desc_act) desc_act = *rule->desc_act;
    spec.act_order = effective_act_order(desc_act, spec.group_size);
    return int_quant_spec(layer, format(), spec);
  }

  std::string summary() const override {
    std::string text = "gptq " + describe_int_spec(spec_);
    text += spec_.zero_format == GptqZeroFormat::kV1 ? " format=gptq(v1)" : " format=gptq_v2";
    if (!dynamic_.empty()) text += fmt::format(" dynamic={} rules", dynamic_.size());
    if (!in_block_.empty()) text += fmt::format(" modules_in_block={}", in_block_.size());
    if (lm_head_) text += " lm_head";
    return text;
  }

 private:
  // GPTQModel: the first key, in insertion order, that matches from the start of the name.
  const DynamicRule* first_dynamic_match(std::string_view name) const {
    for (const auto& rule : dynamic_) {
      if (regex_matches_from_start(rule.regex, name)) return &rule;
    }
    return nullptr;
  }

  IntSpec spec_;
  bool desc_act_;
  std::vector<DynamicRule> dynamic_;
  std::vector<std::string> in_block_;
  bool lm_head_;
  TensorCatalog tensors_;
  std::string source_;
};

Result<GptqZeroFormat> parse_checkpoint_format(const Json& qc, std::string_view where) {
  std::string key;
  const Json* value = find_any(qc, {"checkpoint_format", "format"}, &key);
  if (value == nullptr) return GptqZeroFormat::kV1;
  QL_ASSIGN_OR_RETURN(std::string text, as_string(*value, where, key));
  const std::string lower = lower_ascii(text);
  if (lower == "gptq") return GptqZeroFormat::kV1;
  if (lower == "gptq_v2") return GptqZeroFormat::kV2;
  if (lower == "marlin") {
    return bad_value(ErrorCode::kUnsupported, where, key, *value,
                     "marlin checkpoints hold pre-repacked Marlin tiles, not the GPTQ layout; "
                     "supported: \"gptq\" (v1 zeros), \"gptq_v2\"");
  }
  return bad_value(ErrorCode::kUnsupported, where, key, *value,
                   "unknown GPTQ checkpoint format; supported: \"gptq\" (v1 zeros), \"gptq_v2\"");
}

Result<std::vector<DynamicRule>> parse_dynamic(const Json& qc, std::string_view where) {
  std::vector<DynamicRule> rules;
  const Json* dynamic = find_any(qc, {"dynamic"});
  if (dynamic == nullptr) return rules;
  if (!dynamic->is_object()) {
    return bad_value(ErrorCode::kInvalidArgument, where, "dynamic", *dynamic,
                     "must be an object mapping module regexes to overrides");
  }
  for (const auto& [key, overrides] : dynamic->items()) {
    DynamicRule rule;
    rule.key = key;
    std::string_view pattern = key;
    if (pattern.starts_with("-:")) {
      rule.exclude = true;
      pattern.remove_prefix(2);
    } else if (pattern.starts_with("+:")) {
      pattern.remove_prefix(2);
    }
    const std::string path = fmt::format("dynamic[\"{}\"]", key);
    std::string why;
    auto regex = try_compile_regex(pattern, &why);
    if (!regex) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"dynamic\" key \"{}\": not a regular expression qlinear accepts "
                        "({}; Python-style, without backreferences or lookaround)",
                        where, escape_for_terminal(key), why);
    }
    rule.regex = std::move(*regex);
    if (!overrides.is_object()) {
      return bad_value(ErrorCode::kInvalidArgument, where, path, overrides,
                       "must be an object of overrides (bits, group_size, desc_act, sym)");
    }
    QL_ASSIGN_OR_RETURN(rule.bits, read_int(overrides, {"bits"}, where));
    QL_ASSIGN_OR_RETURN(rule.group_size, read_int(overrides, {"group_size"}, where));
    QL_ASSIGN_OR_RETURN(rule.desc_act, read_bool(overrides, {"desc_act"}, where));
    QL_ASSIGN_OR_RETURN(rule.sym, read_bool(overrides, {"sym"}, where));
    if (!rule.exclude) {
      if (rule.bits) QL_RETURN_IF_ERROR(check_int_bits(*rule.bits, where, path + ".bits"));
      if (rule.group_size) {
        QL_RETURN_IF_ERROR(check_group_size(*rule.group_size, where, path + ".group_size"));
      }
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_gptq(const ParseInput& in) {
  const Json& qc = in.qc;
  QL_ASSIGN_OR_RETURN(auto bits, read_int(qc, {"bits"}, in.source));
  if (!bits) {
    return make_error(ErrorCode::kNotFound, "{}: GPTQ config has no \"bits\"", in.source);
  }
  QL_RETURN_IF_ERROR(check_int_bits(*bits, in.source, "bits"));
  QL_ASSIGN_OR_RETURN(auto group_size, read_int(qc, {"group_size"}, in.source));
  if (!group_size) {
    return make_error(ErrorCode::kNotFound, "{}: GPTQ config has no \"group_size\"", in.source);
  }
  QL_RETURN_IF_ERROR(check_group_size(*group_size, in.source, "group_size"));
  QL_ASSIGN_OR_RETURN(auto desc_act, read_bool(qc, {"desc_act"}, in.source));
  QL_ASSIGN_OR_RETURN(auto sym, read_bool(qc, {"sym"}, in.source));
  QL_ASSIGN_OR_RETURN(GptqZeroFormat zero_format, parse_checkpoint_format(qc, in.source));
  QL_ASSIGN_OR_RETURN(auto dynamic, parse_dynamic(qc, in.source));
  QL_ASSIGN_OR_RETURN(auto in_block,
                      read_name_list(qc, {"modules_in_block_to_quantize"}, in.source));
  QL_ASSIGN_OR_RETURN(auto lm_head, read_bool(qc, {"lm_head"}, in.source));

  IntSpec spec;
  spec.bits = *bits;
  spec.group_size = *group_size;
  spec.sym = sym.value_or(true);
  spec.act_order = effective_act_order(desc_act.value_or(false), *group_size);
  spec.packing = IntPacking::kGptq;
  spec.zero_format = zero_format;
  return std::unique_ptr<QuantConfig>(std::make_unique<GptqConfig>(
      spec, desc_act.value_or(false), std::move(dynamic), std::move(in_block),
      lm_head.value_or(false), in.tensors, std::string(in.source)));
}

}  // namespace qlinear::quant_internal
