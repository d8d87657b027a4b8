// compressed-tensors (llm-compressor), formats.md §1.3 and §3.1: pack-quantized integer weights
// (W4A16 / W8A16) and float-quantized FP8 (W8A8 / W8A16). Each config group becomes one scheme;
// a layer takes the scheme of the group whose targets match it best (exact name, then "re:"
// regex, then module class name), unless `ignore` names it.
#include <nlohmann/json.hpp>

#include <cctype>

#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

// qlinear has one module class for every linear layer; vLLM's are "...ParallelLinear".
constexpr std::string_view kLinearClassName = "Linear";

struct Group {
  std::string name;
  std::vector<NamePattern> targets;
  QuantSpec scheme;  // layer name empty; copied per layer
};

enum class TargetKind { kExact, kRegex, kClass };

bool target_matches(const NamePattern& target, TargetKind kind, std::string_view layer) {
  switch (kind) {
    case TargetKind::kExact:
      return !target.is_regex() && target.text() == layer;
    case TargetKind::kRegex:
      return target.is_regex() && target.matches(layer);
    case TargetKind::kClass:
      return !target.is_regex() && !target.text().empty() &&
             lower_ascii(kLinearClassName).find(lower_ascii(target.text())) != std::string::npos;
  }
  return false;
}

class CompressedTensorsConfig final : public QuantConfig {
 public:
  CompressedTensorsConfig(std::vector<Group> groups, std::vector<NamePattern> ignore,
                          const TensorCatalog& tensors)
      : groups_(std::move(groups)), ignore_(std::move(ignore)), tensors_(tensors) {}

  QuantFormat format() const override { return QuantFormat::kCompressedTensors; }

  std::optional<std::string> skip_entry(std::string_view name) const override {
    if (const NamePattern* entry = find_pattern(name, ignore_)) {
      return "in ignore (" + entry->describe() + ")";
    }
    return std::nullopt;
  }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    if (auto reason = skip_entry(layer)) return dense_spec(layer, format(), std::move(*reason));
    const Group* group = match_group(layer);
    if (group == nullptr) {
      return dense_spec(layer, format(), "not matched by the targets of any config group");
    }
    // An LM head caught only by a class-name target is quantized only if its tensors say so.
    if (is_lm_head(layer) && tensors_.knows_layer(layer) && !stored_quantized(layer)) {
      return dense_spec(layer, format(), "LM head stored unquantized");
    }
    QuantSpec spec = group->scheme;
    spec.layer = std::string(layer);
    return spec;
  }

  std::string summary() const override {
    std::string text = "compressed-tensors";
    for (const auto& group : groups_) {
      text += fmt::format(" {}=[{}]", group.name, group.scheme.describe());
    }
    if (!ignore_.empty()) text += fmt::format(" ignore={} entries", ignore_.size());
    return text;
  }

 private:
  const Group* match_group(std::string_view layer) const {
    for (TargetKind kind : {TargetKind::kExact, TargetKind::kRegex, TargetKind::kClass}) {
      for (const auto& group : groups_) {
        for (const auto& target : group.targets) {
          if (target_matches(target, kind, layer)) return &group;
        }
      }
    }
    return nullptr;
  }

  bool stored_quantized(std::string_view layer) const {
    const std::string prefix(layer);
    if (tensors_.has(prefix + ".weight_packed")) return true;
    auto dtype = tensors_.dtype(prefix + ".weight");
    return dtype && (*dtype == DType::kF8E4M3 || *dtype == DType::kF8E5M2);
  }

  std::vector<Group> groups_;
  std::vector<NamePattern> ignore_;
  TensorCatalog tensors_;
};

// Reads the QuantizationArgs fields qlinear uses.
struct Args {
  int num_bits = 8;
  std::string type = "int";
  bool symmetric = true;
  std::string strategy;
  std::optional<int> group_size;
  std::vector<int> block_structure;
  bool dynamic = false;
  std::string actorder;  // "" when null / false
};

Result<Args> parse_args(const Json& value, std::string_view where, const std::string& path) {
  if (!value.is_object()) {
    return bad_value(ErrorCode::kInvalidArgument, where, path, value,
                     "must be a QuantizationArgs object");
  }
  Args args;
  QL_ASSIGN_OR_RETURN(auto num_bits, read_int(value, {"num_bits"}, where));
  args.num_bits = num_bits.value_or(8);
  QL_ASSIGN_OR_RETURN(auto type, read_string(value, {"type"}, where));
  args.type = lower_ascii(type.value_or("int"));
  QL_ASSIGN_OR_RETURN(auto symmetric, read_bool(value, {"symmetric"}, where));
  args.symmetric = symmetric.value_or(true);
  QL_ASSIGN_OR_RETURN(auto strategy, read_string(value, {"strategy"}, where));
  args.strategy = lower_ascii(strategy.value_or("tensor"));
  QL_ASSIGN_OR_RETURN(args.group_size, read_int(value, {"group_size"}, where));
  if (const Json* block = find_any(value, {"block_structure"})) {
    bool valid = block->is_array() && block->size() == 2;
    if (valid) {
      for (const auto& extent : *block) {
        valid = valid && extent.is_number_integer() && extent.get<int64_t>() > 0 &&
                extent.get<int64_t>() <= (1 << 20);
        if (valid) args.block_structure.push_back(static_cast<int>(extent.get<int64_t>()));
      }
    }
    if (!valid) {
      return bad_value(ErrorCode::kInvalidArgument, where, path + ".block_structure", *block,
                       "must be [block_n, block_k] with two positive integers");
    }
  }
  if (const Json* dynamic = find_any(value, {"dynamic"})) {
    if (dynamic->is_boolean()) {
      args.dynamic = dynamic->get<bool>();
    } else {
      return bad_value(ErrorCode::kUnsupported, where, path + ".dynamic", *dynamic,
                       "only true or false is supported (\"local\" is the NVFP4 scheme)");
    }
  }
  if (const Json* actorder = find_any(value, {"actorder"})) {
    if (actorder->is_string()) {
      args.actorder = lower_ascii(actorder->get<std::string>());
    } else if (actorder->is_boolean()) {
      args.actorder = actorder->get<bool>() ? "group" : "";
    } else {
      return bad_value(ErrorCode::kInvalidArgument, where, path + ".actorder", *actorder,
                       "must be \"group\", \"weight\", a boolean or null");
    }
  }
  return args;
}

Result<IntSpec> pack_quantized_scheme(const Json& group, std::string_view where,
                                      const std::string& path) {
  QL_ASSIGN_OR_RETURN(Args w, parse_args(*find_any(group, {"weights"}), where, path + ".weights"));
  const std::string key = path + ".weights";
  if (w.type != "int") {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.type = \"{}\": pack-quantized weights must be \"int\"", where, key,
                      w.type);
  }
  if (w.num_bits != 4 && w.num_bits != 8) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.num_bits = {}: pack-quantized weights must be 4 or 8 bits", where,
                      key, w.num_bits);
  }
  if (w.dynamic) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.dynamic = true: weights quantized at run time are not supported",
                      where, key);
  }
  if (const Json* act = find_any(group, {"input_activations"})) {
    return bad_value(ErrorCode::kUnsupported, where, path + ".input_activations", *act,
                     "pack-quantized with quantized activations (W4A8 / W8A8 int) is not "
                     "supported; only weight-only (input_activations null) is");
  }
  IntSpec spec;
  spec.bits = w.num_bits;
  spec.sym = w.symmetric;
  spec.packing = IntPacking::kCtPacked;
  if (w.strategy == "channel") {
    spec.group_size = -1;
  } else if (w.strategy == "group") {
    if (!w.group_size || *w.group_size <= 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: {}.group_size = {}: strategy \"group\" needs a positive group_size "
                        "(channelwise weights use strategy \"channel\")",
                        where, key, w.group_size ? std::to_string(*w.group_size) : "null");
    }
    spec.group_size = *w.group_size;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.strategy = \"{}\": pack-quantized weights must use strategy "
                      "\"group\" or \"channel\"",
                      where, key, w.strategy);
  }
  if (w.actorder == "group") {
    spec.act_order = spec.group_size != -1;
  } else if (!w.actorder.empty() && w.actorder != "weight" && w.actorder != "static") {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.actorder = \"{}\": supported are \"group\", \"weight\" and null",
                      where, key, w.actorder);
  }
  return spec;
}

Result<ActQuant> fp8_activation(const Json& group, const Fp8Spec& weights, std::string_view where,
                                const std::string& path) {
  const Json* value = find_any(group, {"input_activations"});
  if (value == nullptr) return ActQuant::kNone;
  const std::string key = path + ".input_activations";
  QL_ASSIGN_OR_RETURN(Args a, parse_args(*value, where, key));
  if (a.type != "float" || a.num_bits != 8) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {} = {} bits {}: FP8 weights take float8 activations or none", where,
                      key, a.num_bits, a.type);
  }
  const bool block = weights.weight == Fp8WeightGranularity::kBlock;
  if (!a.dynamic) {
    if (block) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}.dynamic = false: block FP8 weights need dynamic per-group "
                        "activations; static input scales with block weights are rejected",
                        where, key);
    }
    if (a.strategy != "tensor") {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}.strategy = \"{}\": static activations must be per tensor", where,
                        key, a.strategy);
    }
    if (!a.symmetric) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}.symmetric = false: FP8 activations must be symmetric", where, key);
    }
    return ActQuant::kStaticTensor;
  }
  // Block weights run with (1, block_k) activation groups whatever the dynamic strategy says.
  if (block) {
    if (a.strategy == "group" && a.group_size && *a.group_size != weights.block_k) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}.group_size = {}: activation groups must match block_k = {}", where,
                        key, *a.group_size, weights.block_k);
    }
    return ActQuant::kDynamicGroup;
  }
  if (a.strategy == "token") return ActQuant::kDynamicToken;
  if (a.strategy == "tensor") return ActQuant::kDynamicTensor;
  if (a.strategy == "group") {
    if (a.group_size.value_or(0) != 128) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}.group_size = {}: dynamic group activations must use groups of 128",
                        where, key, a.group_size ? std::to_string(*a.group_size) : "null");
    }
    return ActQuant::kDynamicGroup;
  }
  return make_error(ErrorCode::kUnsupported,
                    "{}: {}.strategy = \"{}\": dynamic FP8 activations must be token, tensor or "
                    "group",
                    where, key, a.strategy);
}

Result<Fp8Spec> float_quantized_scheme(const Json& group, std::string_view where,
                                       const std::string& path) {
  const std::string key = path + ".weights";
  QL_ASSIGN_OR_RETURN(Args w, parse_args(*find_any(group, {"weights"}), where, key));
  if (w.type != "float" || w.num_bits != 8) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {} = {} bits {}: float-quantized weights must be 8-bit float (e4m3)",
                      where, key, w.num_bits, w.type);
  }
  if (w.dynamic || !w.symmetric) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}: FP8 weights must be static and symmetric (dynamic={}, "
                      "symmetric={})",
                      where, key, w.dynamic, w.symmetric);
  }
  Fp8Spec spec;
  spec.scale_name = "weight_scale";
  if (w.strategy == "tensor") {
    spec.weight = Fp8WeightGranularity::kTensor;
  } else if (w.strategy == "channel") {
    spec.weight = Fp8WeightGranularity::kChannel;
  } else if (w.strategy == "block") {
    if (w.block_structure.size() != 2) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: {}.block_structure is missing: strategy \"block\" needs "
                        "[block_n, block_k]",
                        where, key);
    }
    spec.weight = Fp8WeightGranularity::kBlock;
    spec.block_n = w.block_structure[0];
    spec.block_k = w.block_structure[1];
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.strategy = \"{}\": FP8 weights must use strategy tensor, channel or "
                      "block",
                      where, key, w.strategy);
  }
  QL_ASSIGN_OR_RETURN(spec.activation, fp8_activation(group, spec, where, path));
  return spec;
}

// The preset schemes of compressed-tensors (quant_scheme.py) that qlinear runs, for groups
// written as `"FP8_DYNAMIC": ["Linear"]`.
std::optional<Json> preset_scheme(std::string_view name) {
  const std::string upper = [&] {
    std::string text(name);
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
  }();
  auto int_weights = [](int bits, bool sym, const char* strategy) {
    Json w = {{"num_bits", bits}, {"type", "int"}, {"symmetric", sym}, {"strategy", strategy}};
    if (std::string_view(strategy) == "group") w["group_size"] = 128;
    return w;
  };
  auto fp8 = [](const char* strategy, bool dynamic) {
    return Json{{"num_bits", 8},
                {"type", "float"},
                {"symmetric", true},
                {"strategy", strategy},
                {"dynamic", dynamic}};
  };
  Json scheme;
  if (upper == "W4A16") {
    scheme["weights"] = int_weights(4, true, "group");
  } else if (upper == "W4A16_ASYM") {
    scheme["weights"] = int_weights(4, false, "group");
  } else if (upper == "W8A16") {
    scheme["weights"] = int_weights(8, true, "channel");
  } else if (upper == "FP8") {
    scheme["weights"] = fp8("tensor", false);
    scheme["input_activations"] = fp8("tensor", false);
  } else if (upper == "FP8_DYNAMIC") {
    scheme["weights"] = fp8("channel", false);
    scheme["input_activations"] = fp8("token", true);
  } else if (upper == "FP8_BLOCK") {
    scheme["weights"] = fp8("block", false);
    scheme["weights"]["block_structure"] = {128, 128};
    scheme["input_activations"] = fp8("group", true);
    scheme["input_activations"]["group_size"] = 128;
  } else {
    return std::nullopt;
  }
  return scheme;
}

// The storage format of a group whose config names none: what compressed-tensors would pick.
std::string infer_format(const Json& group) {
  const Json* weights = find_any(group, {"weights"});
  if (weights != nullptr && weights->is_object()) {
    auto type = weights->find("type");
    if (type != weights->end() && type->is_string() &&
        lower_ascii(type->get<std::string>()) == "float") {
      return "float-quantized";
    }
  }
  if (find_any(group, {"input_activations"}) != nullptr) return "int-quantized";
  return "pack-quantized";
}

// One config group: a scheme object, or a list of targets under a preset name.
Result<Group> parse_group(const std::string& name, const Json& value, const std::string& global,
                          std::string_view where) {
  const std::string path = fmt::format("config_groups.{}", name);
  Json group;
  if (value.is_array()) {
    auto preset = preset_scheme(name);
    if (!preset) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: {}: \"{}\" is not a preset scheme qlinear runs (W4A16, W4A16_ASYM, "
                        "W8A16, FP8, FP8_DYNAMIC, FP8_BLOCK)",
                        where, path, name);
    }
    group = std::move(*preset);
    group["targets"] = value;
  } else if (value.is_object()) {
    group = value;
  } else {
    return bad_value(ErrorCode::kInvalidArgument, where, path, value,
                     "must be a scheme object or a list of targets under a preset name");
  }

  Group out;
  out.name = name;
  QL_ASSIGN_OR_RETURN(auto targets, read_name_list(group, {"targets"}, where));
  if (targets.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: {}.targets is missing or empty", where,
                      path);
  }
  QL_ASSIGN_OR_RETURN(
      out.targets, compile_name_patterns(targets, std::string(where) + ": " + path + ".targets"));
  if (find_any(group, {"weights"}) == nullptr) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.weights is null: activation-only quantization is not supported",
                      where, path);
  }
  if (const Json* out_act = find_any(group, {"output_activations"})) {
    return bad_value(ErrorCode::kUnsupported, where, path + ".output_activations", *out_act,
                     "output activation quantization is not supported");
  }
  QL_ASSIGN_OR_RETURN(auto format, read_string(group, {"format"}, where));
  std::string fmt_name = lower_ascii(format.value_or(global));
  if (fmt_name.empty() || fmt_name == "mixed-precision") fmt_name = infer_format(group);

  out.scheme.format = QuantFormat::kCompressedTensors;
  out.scheme.quantized = true;
  if (fmt_name == "pack-quantized") {
    QL_ASSIGN_OR_RETURN(out.scheme.int_spec, pack_quantized_scheme(group, where, path));
  } else if (fmt_name == "float-quantized" || fmt_name == "naive-quantized") {
    QL_ASSIGN_OR_RETURN(out.scheme.fp8_spec, float_quantized_scheme(group, where, path));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}: unsupported compressed-tensors format \"{}\" (supported: "
                      "pack-quantized, float-quantized, naive-quantized with FP8)",
                      where, path, fmt_name);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<QuantConfig>> parse_compressed_tensors(const ParseInput& in) {
  const Json& qc = in.qc;
  if (const Json* sparsity = find_any(qc, {"sparsity_config"})) {
    if (sparsity->is_object()) {
      auto format = sparsity->find("format");
      if (format != sparsity->end() && format->is_string() &&
          lower_ascii(format->get<std::string>()) != "dense") {
        return bad_value(ErrorCode::kUnsupported, in.source, "sparsity_config.format", *format,
                         "sparse compressed-tensors checkpoints are not supported");
      }
    }
  }
  QL_ASSIGN_OR_RETURN(auto global_format, read_string(qc, {"format"}, in.source));
  const Json* groups_json = find_any(qc, {"config_groups"});
  if (groups_json == nullptr || !groups_json->is_object() || groups_json->empty()) {
    return make_error(ErrorCode::kNotFound,
                      "{}: \"config_groups\" is missing or empty: a compressed-tensors config "
                      "needs at least one quantization scheme",
                      in.source);
  }
  std::vector<Group> groups;
  for (const auto& [name, value] : groups_json->items()) {
    QL_ASSIGN_OR_RETURN(Group group,
                        parse_group(name, value, global_format.value_or(""), in.source));
    groups.push_back(std::move(group));
  }
  QL_ASSIGN_OR_RETURN(auto ignore_names, read_name_list(qc, {"ignore"}, in.source));
  QL_ASSIGN_OR_RETURN(auto ignore,
                      compile_name_patterns(ignore_names, std::string(in.source) + ": ignore"));
  return std::unique_ptr<QuantConfig>(
      std::make_unique<CompressedTensorsConfig>(std::move(groups), std::move(ignore), in.tensors));
}

}  // namespace qlinear::quant_internal
