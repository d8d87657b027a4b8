#include "quant/model_layout.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/escape.h"

namespace qlinear {
namespace {

struct FamilyName {
  ModelFamily family;
  std::string_view model_type;
  std::string_view architecture;
};

constexpr FamilyName kFamilies[] = {
    {ModelFamily::kLlama, "llama", "LlamaForCausalLM"},
    {ModelFamily::kMistral, "mistral", "MistralForCausalLM"},
    {ModelFamily::kQwen2, "qwen2", "Qwen2ForCausalLM"},
    {ModelFamily::kQwen3, "qwen3", "Qwen3ForCausalLM"},
};

// Larger than any real model's size (vocabularies reach ~260k), small enough that products of
// two sizes stay far from overflow.
constexpr int64_t kMaxSize = int64_t{1} << 24;

std::string brief(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return escape_for_terminal(text);
}

// A positive integer size under `key`; nullopt when the key is absent or null.
Result<std::optional<int64_t>> read_size(const nlohmann::json& config, const char* key,
                                         std::string_view where) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<int64_t>();
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > kMaxSize) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: \"{}\" = {}: must be a positive integer of at most {}", where, key,
                      brief(*it), kMaxSize);
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

Result<int64_t> required_size(const nlohmann::json& config, const char* key, std::string_view where,
                              std::string_view architecture) {
  QL_ASSIGN_OR_RETURN(const std::optional<int64_t> value, read_size(config, key, where));
  if (!value) {
    return make_error(ErrorCode::kMisconfigured, "{}: \"{}\" is missing (a {} config needs it)",
                      where, key, architecture);
  }
  return *value;
}

ModelFamily family_of_type(std::string_view model_type) {
  for (const FamilyName& f : kFamilies) {
    if (f.model_type == model_type) return f.family;
  }
  return ModelFamily::kUnknown;
}

ModelFamily family_of_architecture(std::string_view architecture) {
  for (const FamilyName& f : kFamilies) {
    if (f.architecture == architecture) return f.family;
  }
  return ModelFamily::kUnknown;
}

}  // namespace

std::string_view model_family_name(ModelFamily family) {
  for (const FamilyName& f : kFamilies) {
    if (f.family == family) return f.architecture;
  }
  return "unknown";
}

Result<ModelLayout> read_model_layout(const nlohmann::json& config, std::string_view where) {
  ModelLayout layout;
  std::string model_type;
  std::string architecture;
  if (const auto it = config.find("model_type"); it != config.end() && it->is_string()) {
    model_type = it->get<std::string>();
  }
  if (const auto it = config.find("architectures");
      it != config.end() && it->is_array() && !it->empty() && it->front().is_string()) {
    architecture = it->front().get<std::string>();
  }
  const ModelFamily by_type = family_of_type(model_type);
  const ModelFamily by_arch = family_of_architecture(architecture);
  if (by_type != ModelFamily::kUnknown && by_arch != ModelFamily::kUnknown && by_type != by_arch) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: \"model_type\" = \"{}\" but \"architectures\" names {}: the two "
                      "disagree about the model family",
                      where, escape_for_terminal(model_type), escape_for_terminal(architecture));
  }
  layout.family = by_type != ModelFamily::kUnknown ? by_type : by_arch;
  layout.architecture = escape_for_terminal(!architecture.empty() ? architecture : model_type);
  if (layout.family == ModelFamily::kUnknown) return layout;
  const std::string_view arch = model_family_name(layout.family);

  ModelDims d;
  QL_ASSIGN_OR_RETURN(d.hidden_size, required_size(config, "hidden_size", where, arch));
  QL_ASSIGN_OR_RETURN(d.intermediate_size, required_size(config, "intermediate_size", where, arch));
  QL_ASSIGN_OR_RETURN(d.num_layers, required_size(config, "num_hidden_layers", where, arch));
  QL_ASSIGN_OR_RETURN(d.num_heads, required_size(config, "num_attention_heads", where, arch));
  QL_ASSIGN_OR_RETURN(d.vocab_size, required_size(config, "vocab_size", where, arch));
  QL_ASSIGN_OR_RETURN(const auto kv_heads, read_size(config, "num_key_value_heads", where));
  QL_ASSIGN_OR_RETURN(const auto head_dim, read_size(config, "head_dim", where));
  d.kv_heads_given = kv_heads.has_value();
  d.num_kv_heads = kv_heads.value_or(d.num_heads);
  d.head_dim_given = head_dim.has_value();
  if (head_dim) {
    d.head_dim = *head_dim;
  } else if (d.hidden_size % d.num_heads != 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: \"head_dim\" is absent and \"hidden_size\" = {} is not a multiple of "
                      "\"num_attention_heads\" = {}",
                      where, d.hidden_size, d.num_heads);
  } else {
    d.head_dim = d.hidden_size / d.num_heads;
  }
  if (d.num_heads % d.num_kv_heads != 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: \"num_key_value_heads\" = {} does not divide \"num_attention_heads\" = "
                      "{} (each key/value head serves a whole group of query heads)",
                      where, d.num_kv_heads, d.num_heads);
  }
  if (const auto it = config.find("tie_word_embeddings"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: \"tie_word_embeddings\" = {}: must be true or false", where,
                        brief(*it));
    }
    d.tie_word_embeddings = it->get<bool>();
  }
  layout.dims = d;
  return layout;
}

}  // namespace qlinear
