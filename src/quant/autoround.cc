// AutoRound / Intel Neural Compressor (formats.md §1.4). Integer data only; each layer is
// GPTQ- or AWQ-packed, chosen from packing_format / backend, with per-layer extra_config.
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

constexpr int kUnquantizedBits = 16;  // bits >= 16 means "keep this layer in float"

// One extra_config entry; missing fields fall back to the global (or unquantized) values.
struct LayerOverride {
  std::string key;
  std::optional<int> bits;
  std::optional<int> group_size;
  std::optional<bool> sym;
};

struct RegexOverride {
  LayerOverride fields;
  Regex regex;
};

class AutoRoundConfig final : public QuantConfig {
 public:
  AutoRoundConfig(IntSpec spec, std::vector<std::string> blocks,
                  std::map<std::string, LayerOverride, std::less<>> exact,
                  std::vector<RegexOverride> regexes, std::string source)
      : spec_(spec),
        blocks_(std::move(blocks)),
        exact_(std::move(exact)),
        regexes_(std::move(regexes)),
        source_(std::move(source)) {}

  QuantFormat format() const override { return QuantFormat::kAutoRound; }

  std::optional<std::string> skip_entry(std::string_view name) const override {
    if (const LayerOverride* entry = find_exact(name)) {
      if (entry->bits.value_or(spec_.bits) >= kUnquantizedBits) return unquantized_reason(*entry);
    }
    return std::nullopt;
  }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    // 1. An exact entry wins, whatever the block list or LM-head default says.
    if (const LayerOverride* entry = find_exact(layer)) return apply(layer, *entry, true);
    // 2. Quantized by default, except the LM head; a block list narrows it.
    bool quantized = !is_lm_head(layer);
    std::string reason = "LM head: AutoRound leaves it unquantized by default";
    if (!blocks_.empty()) {
      quantized = false;
      for (const auto& block : blocks_) {
        if (layer.starts_with(block)) quantized = true;
      }
      if (!quantized) reason = "outside block_name_to_quantize";
    }
    // 5. Regex keys, searched anywhere in the name, first match in written order.
    for (const auto& entry : regexes_) {
      if (regex_matches_anywhere(entry.regex, layer)) return apply(layer, entry.fields, quantized);
    }
    if (!quantized) return dense_spec(layer, format(), std::move(reason));
    if (spec_.bits >= kUnquantizedBits) {
      return dense_spec(layer, format(), "AutoRound \"bits\" >= 16: not quantized");
    }
    return int_quant_spec(layer, format(), spec_);
  }

  std::string summary() const override {
    std::string text = fmt::format("auto-round {} packing={}", describe_int_spec(spec_),
                                   int_packing_name(spec_.packing));
    if (!blocks_.empty()) text += fmt::format(" blocks={}", fmt::join(blocks_, ","));
    const std::size_t overrides = exact_.size() + regexes_.size();
    if (overrides != 0) text += fmt::format(" extra_config={} entries", overrides);
    return text;
  }

 private:
  const LayerOverride* find_exact(std::string_view name) const {
    if (auto it = exact_.find(name); it != exact_.end()) return &it->second;
    if (auto it = exact_.find("model." + std::string(name)); it != exact_.end()) {
      return &it->second;
    }
    return nullptr;
  }

  std::string unquantized_reason(const LayerOverride& entry) const {
    return fmt::format("extra_config[\"{}\"] keeps it unquantized (bits >= 16)", entry.key);
  }

  // `quantized` picks the defaults of missing fields: the global scheme, or float.
  Result<QuantSpec> apply(std::string_view layer, const LayerOverride& entry,
                          bool quantized) const {
    const int bits = entry.bits.value_or(quantized ? spec_.bits : kUnquantizedBits);
    if (bits >= kUnquantizedBits) {
      return dense_spec(layer, format(),
                        entry.bits ? unquantized_reason(entry)
                                   : "not quantized by default; extra_config[\"" + entry.key +
                                         "\"] sets no bits");
    }
    IntSpec spec = spec_;
    spec.bits = bits;
    spec.group_size = entry.group_size.value_or(spec_.group_size);
    spec.sym = entry.sym.value_or(spec_.sym);
    if (spec.packing == IntPacking::kAwq && spec.bits != 4) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: extra_config[\"{}\"] gives layer \"{}\" bits={}: AWQ-packed "
                        "(auto_round:auto_awq) layers must be 4-bit",
                        source_, entry.key, layer, spec.bits);
    }
    return int_quant_spec(layer, format(), spec);
  }

  IntSpec spec_;
  std::vector<std::string> blocks_;
  std::map<std::string, LayerOverride, std::less<>> exact_;
  std::vector<RegexOverride> regexes_;
  std::string source_;
};

// Integer codes only; a float data_type is accepted where bits >= 16 keeps the layer in float.
Status check_data_type(const Json& object, int bits, std::string_view where, std::string_view key) {
  QL_ASSIGN_OR_RETURN(auto data_type, read_string(object, {"data_type"}, where));
  if (!data_type || bits >= kUnquantizedBits) return Status::ok_status();
  if (lower_ascii(*data_type) == "int") return Status::ok_status();
  return make_error(ErrorCode::kUnsupported,
                    "{}: \"{}\" = \"{}\": AutoRound data_type \"{}\" (fp8 / mx / nv variants) is "
                    "not supported; only integer AutoRound weights (\"int\") are",
                    where, key, *data_type, *data_type);
}

// GPTQ wins when both "gptq" and "awq" occur in packing_format / backend.
Result<IntPacking> choose_packing(const Json& qc, std::string_view where) {
  QL_ASSIGN_OR_RETURN(auto packing_format, read_string(qc, {"packing_format"}, where));
  QL_ASSIGN_OR_RETURN(auto backend, read_string(qc, {"backend", "vllm_backend"}, where));
  const std::string packing = lower_ascii(packing_format.value_or("auto_round:auto_gptq"));
  const std::string both = packing + " " + lower_ascii(backend.value_or(""));
  if (packing.find("fp8") != std::string::npos || packing.find("mx") != std::string::npos ||
      packing.find("nv") != std::string::npos) {
    return make_error(
        ErrorCode::kUnsupported,
        "{}: \"packing_format\" = \"{}\": float AutoRound packings are not supported; "
        "supported: auto_round:auto_gptq, auto_round:auto_awq",
        where, *packing_format);
  }
  if (both.find("gptq") != std::string::npos) return IntPacking::kGptq;
  if (both.find("awq") != std::string::npos) return IntPacking::kAwq;
  return make_error(ErrorCode::kUnsupported,
                    "{}: \"packing_format\" = \"{}\": neither it nor \"backend\" names gptq or awq "
                    "packing; supported: auto_round:auto_gptq, auto_round:auto_awq",
                    where, packing);
}

Result<LayerOverride> parse_override(const std::string& key, const Json& value,
                                     std::string_view where) {
  const std::string path = fmt::format("extra_config[\"{}\"]", key);
  if (!value.is_object()) {
    return bad_value(ErrorCode::kInvalidArgument, where, path, value,
                     "must be an object (bits, group_size, sym, data_type)");
  }
  LayerOverride entry;
  entry.key = key;
  QL_ASSIGN_OR_RETURN(entry.bits, read_int(value, {"bits"}, where));
  QL_ASSIGN_OR_RETURN(entry.group_size, read_int(value, {"group_size"}, where));
  QL_ASSIGN_OR_RETURN(entry.sym, read_bool(value, {"sym"}, where));
  if (entry.bits && *entry.bits < kUnquantizedBits) {
    QL_RETURN_IF_ERROR(check_int_bits(*entry.bits, where, path + ".bits"));
    QL_RETURN_IF_ERROR(check_data_type(value, *entry.bits, where, path + ".data_type"));
  }
  if (entry.group_size) {
    QL_RETURN_IF_ERROR(check_group_size(*entry.group_size, where, path + ".group_size"));
  }
  return entry;
}

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_autoround(const ParseInput& in) {
  const Json& qc = in.qc;
  if (in.quant_method.find("fp8") != std::string::npos) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: \"quant_method\" = \"{}\": AutoRound FP8 is not supported; only integer "
                      "AutoRound weights are",
                      in.source, in.quant_method);
  }
  QL_ASSIGN_OR_RETURN(auto bits, read_int(qc, {"bits"}, in.source));
  if (!bits) {
    return make_error(ErrorCode::kNotFound, "{}: AutoRound config has no \"bits\"", in.source);
  }
  IntSpec spec;
  if (*bits < kUnquantizedBits) QL_RETURN_IF_ERROR(check_int_bits(*bits, in.source, "bits"));
  QL_RETURN_IF_ERROR(check_data_type(qc, *bits, in.source, "data_type"));
  spec.bits = *bits;

  if (const Json* group = find_any(qc, {"group_size"}); group != nullptr && group->is_array()) {
    return bad_value(ErrorCode::kUnsupported, in.source, "group_size", *group,
                     "a [block_n, block_k] group is the AutoRound FP8 block scheme, which is not "
                     "supported");
  }
  QL_ASSIGN_OR_RETURN(auto group_size, read_int(qc, {"group_size"}, in.source));
  spec.group_size = group_size.value_or(128);
  QL_RETURN_IF_ERROR(check_group_size(spec.group_size, in.source, "group_size"));
  QL_ASSIGN_OR_RETURN(auto sym, read_bool(qc, {"sym"}, in.source));
  spec.sym = sym.value_or(true);
  QL_ASSIGN_OR_RETURN(spec.packing, choose_packing(qc, in.source));
  if (spec.packing == IntPacking::kAwq && spec.bits != 4 && spec.bits < kUnquantizedBits) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: \"bits\" = {} with auto_round:auto_awq packing: AWQ-packed layers must "
                      "be 4-bit (vLLM and qlinear read 4-bit AWQ only)",
                      in.source, spec.bits);
  }
  QL_ASSIGN_OR_RETURN(auto checkpoint_format, read_string(qc, {"checkpoint_format"}, in.source));
  spec.zero_format = lower_ascii(checkpoint_format.value_or("gptq")) == "gptq_v2"
                         ? GptqZeroFormat::kV2
                         : GptqZeroFormat::kV1;

  QL_ASSIGN_OR_RETURN(
      auto blocks,
      read_name_list(qc, {"block_name_to_quantize", "to_quant_block_names"}, in.source));

  std::map<std::string, LayerOverride, std::less<>> exact;
  std::vector<RegexOverride> regexes;
  if (const Json* extra = find_any(qc, {"extra_config"})) {
    if (!extra->is_object()) {
      return bad_value(ErrorCode::kInvalidArgument, in.source, "extra_config", *extra,
                       "must be an object mapping layer names or regexes to settings");
    }
    for (const auto& [key, value] : extra->items()) {
      QL_ASSIGN_OR_RETURN(LayerOverride entry, parse_override(key, value, in.source));
      if (looks_like_regex(key)) {
        // AutoRound skips keys that do not compile; so do we.
        if (auto regex = try_compile_regex(key)) {
          regexes.push_back(RegexOverride{std::move(entry), std::move(*regex)});
        }
      } else {
        exact.emplace(key, std::move(entry));
      }
    }
  }

  auto config = std::make_unique<AutoRoundConfig>(spec, std::move(blocks), std::move(exact),
                                                  std::move(regexes), std::string(in.source));
  return std::unique_ptr<QuantConfig>(std::move(config));
}

}  // namespace qlinear::quant_internal
