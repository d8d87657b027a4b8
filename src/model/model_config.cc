#include "model/model_config.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>

namespace qlinear {
namespace {

using Json = nlohmann::json;

constexpr const char* kSupportedArchitectures =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM";

std::string brief(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

Status bad(std::string_view where, std::string_view key, const Json& value, std::string_view rule) {
  return make_error(ErrorCode::kUnsupported, "{}: config.json \"{}\" = {}: {}", where, key,
                    brief(value), rule);
}

// The integer under `key`; `fallback` when absent or null (nullopt: required).
Result<int64_t> get_int(const Json& config, std::string_view where, const char* key,
                        std::optional<int64_t> fallback, int64_t minimum = 1) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::kMisconfigured, "{}: config.json has no \"{}\" (required)", where,
                      key);
  }
  if (!it->is_number_integer() &&
      !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>())) {
    return bad(where, key, *it, "must be an integer");
  }
  const int64_t value =
      it->is_number_integer() ? it->get<int64_t>() : static_cast<int64_t>(it->get<double>());
  if (value < minimum) {
    return bad(where, key, *it, fmt::format("must be at least {}", minimum));
  }
  return value;
}

Result<double> get_double(const Json& object, std::string_view where, const char* key,
                          double fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number()) return bad(where, key, *it, "must be a number");
  const double value = it->get<double>();
  if (!std::isfinite(value)) return bad(where, key, *it, "must be finite");
  return value;
}

Result<std::optional<double>> get_optional_double(const Json& object, std::string_view where,
                                                  const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return bad(where, key, *it, "must be a number");
  return std::optional<double>(it->get<double>());
}

Result<bool> get_bool(const Json& object, std::string_view where, const char* key, bool fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return bad(where, key, *it, "must be true or false");
  return it->get<bool>();
}

// Token ids: an integer or a list of integers.
Result<std::vector<int32_t>> token_ids(const Json& value, std::string_view where,
                                       std::string_view key) {
  std::vector<int32_t> ids;
  auto one = [&](const Json& v) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return bad(where, key, value, "must be a token id or a list of token ids");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    return Status::ok_status();
  };
  if (value.is_null()) return ids;
  if (value.is_array()) {
    for (const Json& v : value) QL_RETURN_IF_ERROR(one(v));
  } else {
    QL_RETURN_IF_ERROR(one(value));
  }
  return ids;
}

Result<Architecture> parse_architecture(const Json& config, std::string_view where,
                                        std::string* name) {
  const auto archs = config.find("architectures");
  if (archs != config.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string()) {
    *name = (*archs)[0].get<std::string>();
  } else if (const auto type = config.find("model_type");
             type != config.end() && type->is_string()) {
    const std::string t = type->get<std::string>();
    *name = t == "llama"     ? "LlamaForCausalLM"
            : t == "mistral" ? "MistralForCausalLM"
            : t == "qwen2"   ? "Qwen2ForCausalLM"
            : t == "qwen3"   ? "Qwen3ForCausalLM"
                             : t;
  } else {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: config.json names no architecture (\"architectures\" or "
                      "\"model_type\"); supported: {}",
                      where, kSupportedArchitectures);
  }
  if (*name == "LlamaForCausalLM") return Architecture::kLlama;
  if (*name == "MistralForCausalLM") return Architecture::kMistral;
  if (*name == "Qwen2ForCausalLM") return Architecture::kQwen2;
  if (*name == "Qwen3ForCausalLM") return Architecture::kQwen3;
  return make_error(ErrorCode::kUnsupported,
                    "{}: config.json \"architectures\" = \"{}\" is not supported; supported: {}",
                    where, *name, kSupportedArchitectures);
}

// transformers 4: rope_theta + rope_scaling; transformers 5: rope_parameters (which holds
// rope_theta too).
Result<RopeConfig> parse_rope(const Json& config, std::string_view where, int64_t max_positions) {
  RopeConfig rope;
  const Json* params = nullptr;
  std::string key = "rope_scaling";
  if (const auto it = config.find("rope_parameters"); it != config.end() && !it->is_null()) {
    params = &*it;
    key = "rope_parameters";
  } else if (const auto s = config.find("rope_scaling"); s != config.end() && !s->is_null()) {
    params = &*s;
  }
  QL_ASSIGN_OR_RETURN(rope.theta, get_double(config, where, "rope_theta", 10000.0));
  if (params == nullptr) return rope;
  if (!params->is_object()) return bad(where, key, *params, "must be an object");
  const std::string where_key = fmt::format("{}: config.json \"{}\"", where, key);
  QL_ASSIGN_OR_RETURN(rope.theta, get_double(*params, where_key, "rope_theta", rope.theta));
  std::string type = "default";
  for (const char* name : {"rope_type", "type"}) {
    const auto it = params->find(name);
    if (it != params->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  if (params->contains("full_attention") || params->contains("sliding_attention")) {
    return bad(where, key, *params, "per-layer-type RoPE parameters are not supported");
  }
  QL_ASSIGN_OR_RETURN(rope.factor, get_double(*params, where_key, "factor", 1.0));
  if (type == "default") {
    rope.type = RopeType::kDefault;
  } else if (type == "linear") {
    rope.type = RopeType::kLinear;
  } else if (type == "llama3") {
    rope.type = RopeType::kLlama3;
    QL_ASSIGN_OR_RETURN(rope.low_freq_factor,
                        get_double(*params, where_key, "low_freq_factor", 1.0));
    QL_ASSIGN_OR_RETURN(rope.high_freq_factor,
                        get_double(*params, where_key, "high_freq_factor", 4.0));
    QL_ASSIGN_OR_RETURN(
        rope.original_max_positions,
        get_int(*params, where_key, "original_max_position_embeddings", std::nullopt));
    if (rope.high_freq_factor <= rope.low_freq_factor) {
      return bad(where, key, *params, "llama3 needs high_freq_factor > low_freq_factor");
    }
  } else if (type == "yarn") {
    rope.type = RopeType::kYarn;
    QL_ASSIGN_OR_RETURN(rope.beta_fast, get_double(*params, where_key, "beta_fast", 32.0));
    QL_ASSIGN_OR_RETURN(rope.beta_slow, get_double(*params, where_key, "beta_slow", 1.0));
    QL_ASSIGN_OR_RETURN(rope.attention_factor,
                        get_optional_double(*params, where_key, "attention_factor"));
    QL_ASSIGN_OR_RETURN(rope.mscale, get_optional_double(*params, where_key, "mscale"));
    QL_ASSIGN_OR_RETURN(rope.mscale_all_dim,
                        get_optional_double(*params, where_key, "mscale_all_dim"));
    QL_ASSIGN_OR_RETURN(rope.truncate, get_bool(*params, where_key, "truncate", true));
    QL_ASSIGN_OR_RETURN(
        rope.original_max_positions,
        get_int(*params, where_key, "original_max_position_embeddings", max_positions));
  } else {
    return bad(where, key, *params,
               fmt::format("rope_type \"{}\" is not supported (supported: default, linear, llama3, "
                           "yarn)",
                           type));
  }
  if (!(rope.factor > 0.0)) return bad(where, key, *params, "factor must be > 0");
  return rope;
}

Result<DType> parse_dtype(const Json& config, std::string_view where) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_string()) return bad(where, key, *it, "must be a dtype name");
    const std::string name = it->get<std::string>();
    if (name == "bfloat16") return DType::kBF16;
    if (name == "float16") return DType::kF16;
    if (name == "float32") return DType::kF32;
    return bad(where, key, *it, "must be bfloat16, float16 or float32");
  }
  return DType::kBF16;
}

Status parse_sliding(const Json& config, std::string_view where, ModelConfig* c) {
  c->sliding_layers.assign(static_cast<std::size_t>(c->layers), false);
  if (const auto types = config.find("layer_types"); types != config.end() && !types->is_null()) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != c->layers) {
      return bad(where, "layer_types", *types,
                 fmt::format("must list one type per layer ({} layers)", c->layers));
    }
    for (std::size_t i = 0; i < types->size(); ++i) {
      const Json& t = (*types)[i];
      if (t == "sliding_attention") {
        c->sliding_layers[i] = true;
      } else if (t != "full_attention") {
        return bad(where, "layer_types", t,
                   "entries must be \"full_attention\" or \"sliding_attention\"");
      }
    }
  }
  QL_ASSIGN_OR_RETURN(const int64_t window, get_int(config, where, "sliding_window", 0, 0));
  bool any_layer = false;
  for (bool b : c->sliding_layers) any_layer = any_layer || b;
  switch (c->arch) {
    case Architecture::kMistral:
      if (window > 0 && !config.contains("layer_types")) {
        c->sliding_layers.assign(c->sliding_layers.size(), true);
        any_layer = true;
      }
      break;
    case Architecture::kQwen2:
    case Architecture::kQwen3: {
      QL_ASSIGN_OR_RETURN(const bool use, get_bool(config, where, "use_sliding_window", false));
      if (use && window > 0 && !config.contains("layer_types")) {
        QL_ASSIGN_OR_RETURN(const int64_t from,
                            get_int(config, where, "max_window_layers", c->layers, 0));
        for (int64_t i = from; i < c->layers; ++i) c->sliding_layers[i] = true;
        any_layer = from < c->layers;
      }
      if (!use && !config.contains("layer_types")) any_layer = false;
      break;
    }
    case Architecture::kLlama:
      break;
  }
  c->sliding_window = any_layer ? window : 0;
  if (any_layer && window <= 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: config.json marks sliding-attention layers but \"sliding_window\" is "
                      "not a positive integer",
                      where);
  }
  if (!any_layer) c->sliding_layers.assign(c->sliding_layers.size(), false);
  return Status::ok_status();
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kMistral:
      return "mistral";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "unknown";
}

std::string_view rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::kDefault:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kLlama3:
      return "llama3";
    case RopeType::kYarn:
      return "yarn";
  }
  return "unknown";
}

Result<ModelConfig> parse_model_config(const Json& config, const Json* generation,
                                       std::string_view where) {
  if (!config.is_object()) {
    return make_error(ErrorCode::kMisconfigured, "{}: config.json is not a JSON object", where);
  }
  ModelConfig c;
  QL_ASSIGN_OR_RETURN(c.arch, parse_architecture(config, where, &c.architecture));
  if (const auto act = config.find("hidden_act"); act != config.end() && !act->is_null()) {
    if (*act != "silu") return bad(where, "hidden_act", *act, "only \"silu\" is supported");
  }
  QL_ASSIGN_OR_RETURN(c.hidden, get_int(config, where, "hidden_size", std::nullopt));
  QL_ASSIGN_OR_RETURN(c.intermediate, get_int(config, where, "intermediate_size", std::nullopt));
  QL_ASSIGN_OR_RETURN(c.layers, get_int(config, where, "num_hidden_layers", std::nullopt));
  QL_ASSIGN_OR_RETURN(c.heads, get_int(config, where, "num_attention_heads", std::nullopt));
  QL_ASSIGN_OR_RETURN(c.kv_heads, get_int(config, where, "num_key_value_heads", c.heads));
  QL_ASSIGN_OR_RETURN(c.vocab, get_int(config, where, "vocab_size", std::nullopt));
  QL_ASSIGN_OR_RETURN(c.max_positions,
                      get_int(config, where, "max_position_embeddings", int64_t{2048}));
  if (c.heads % c.kv_heads != 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: config.json \"num_attention_heads\" = {} is not a multiple of "
                      "\"num_key_value_heads\" = {} (grouped-query attention)",
                      where, c.heads, c.kv_heads);
  }
  const bool explicit_head_dim = config.contains("head_dim") && !config["head_dim"].is_null();
  if (!explicit_head_dim && c.hidden % c.heads != 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: config.json \"hidden_size\" = {} is not a multiple of "
                      "\"num_attention_heads\" = {} and there is no \"head_dim\"",
                      where, c.hidden, c.heads);
  }
  QL_ASSIGN_OR_RETURN(c.head_dim, get_int(config, where, "head_dim", c.hidden / c.heads));
  if (c.head_dim % 2 != 0) {
    return bad(where, "head_dim", c.head_dim, "must be even (rotary pairs)");
  }
  QL_ASSIGN_OR_RETURN(c.rms_eps, get_double(config, where, "rms_norm_eps", 1e-6));
  QL_ASSIGN_OR_RETURN(c.rope, parse_rope(config, where, c.max_positions));
  if (const auto f = config.find("partial_rotary_factor"); f != config.end() && !f->is_null()) {
    if (!f->is_number() || f->get<double>() != 1.0) {
      return bad(where, "partial_rotary_factor", *f, "only 1.0 is supported");
    }
  }
  QL_ASSIGN_OR_RETURN(c.tie_embeddings, get_bool(config, where, "tie_word_embeddings", false));
  QL_ASSIGN_OR_RETURN(const bool attention_bias, get_bool(config, where, "attention_bias", false));
  QL_ASSIGN_OR_RETURN(c.mlp_bias, get_bool(config, where, "mlp_bias", false));
  switch (c.arch) {
    case Architecture::kLlama:
      c.qkv_bias = c.o_bias = attention_bias;
      break;
    case Architecture::kMistral:
      break;
    case Architecture::kQwen2:
      c.qkv_bias = true;  // Qwen2 attention: q, k, v with bias, o without (not configurable)
      break;
    case Architecture::kQwen3:
      c.qkv_bias = c.o_bias = attention_bias;
      c.qk_norm = true;
      break;
  }
  QL_RETURN_IF_ERROR(parse_sliding(config, where, &c));
  QL_ASSIGN_OR_RETURN(c.dtype, parse_dtype(config, where));
  if (const auto bos = config.find("bos_token_id"); bos != config.end() && !bos->is_null()) {
    QL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_ids(*bos, where, "bos_token_id"));
    if (!ids.empty()) c.bos_id = ids.front();
  }
  if (const auto eos = config.find("eos_token_id"); eos != config.end()) {
    QL_ASSIGN_OR_RETURN(c.eos_ids, token_ids(*eos, where, "eos_token_id"));
  }
  if (generation != nullptr && generation->is_object()) {
    const std::string gwhere = fmt::format("{} (generation_config.json)", where);
    if (const auto eos = generation->find("eos_token_id");
        eos != generation->end() && !eos->is_null()) {
      QL_ASSIGN_OR_RETURN(c.eos_ids, token_ids(*eos, gwhere, "eos_token_id"));
    }
    if (const auto bos = generation->find("bos_token_id");
        bos != generation->end() && !bos->is_null()) {
      QL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, token_ids(*bos, gwhere, "bos_token_id"));
      if (!ids.empty()) c.bos_id = ids.front();
    }
    GenerationDefaults& g = c.generation;
    QL_ASSIGN_OR_RETURN(g.temperature, get_optional_double(*generation, gwhere, "temperature"));
    QL_ASSIGN_OR_RETURN(g.top_p, get_optional_double(*generation, gwhere, "top_p"));
    QL_ASSIGN_OR_RETURN(g.min_p, get_optional_double(*generation, gwhere, "min_p"));
    QL_ASSIGN_OR_RETURN(g.repetition_penalty,
                        get_optional_double(*generation, gwhere, "repetition_penalty"));
    if (const auto k = generation->find("top_k"); k != generation->end() && !k->is_null()) {
      if (!k->is_number_integer()) return bad(gwhere, "top_k", *k, "must be an integer");
      g.top_k = static_cast<int>(k->get<int64_t>());
    }
    if (const auto s = generation->find("do_sample"); s != generation->end() && s->is_boolean()) {
      g.do_sample = s->get<bool>();
    }
  }
  for (int32_t id : c.eos_ids) {
    if (id >= c.vocab) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: eos_token_id {} is outside the vocabulary (vocab_size {})", where, id,
                        c.vocab);
    }
  }
  return c;
}

RopeFrequencies rope_frequencies(const ModelConfig& config) {
  const RopeConfig& rope = config.rope;
  const int64_t dim = config.head_dim;
  const int64_t half = dim / 2;
  RopeFrequencies out;
  out.inv_freq.resize(static_cast<std::size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    out.inv_freq[i] =
        1.0 / std::pow(rope.theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  }
  switch (rope.type) {
    case RopeType::kDefault:
      break;
    case RopeType::kLinear:
      for (double& f : out.inv_freq) f /= rope.factor;
      break;
    case RopeType::kLlama3: {
      const double old_len = static_cast<double>(rope.original_max_positions);
      const double low_wavelen = old_len / rope.low_freq_factor;
      const double high_wavelen = old_len / rope.high_freq_factor;
      for (double& f : out.inv_freq) {
        const double wavelen = 2.0 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f /= rope.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (old_len / wavelen - rope.low_freq_factor) /
                                (rope.high_freq_factor - rope.low_freq_factor);
          f = (1.0 - smooth) * f / rope.factor + smooth * f;
        }
      }
      break;
    }
    case RopeType::kYarn: {
      const auto get_mscale = [](double scale, double m) {
        return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
      };
      if (rope.attention_factor) {
        out.attention_factor = *rope.attention_factor;
      } else if (rope.mscale && rope.mscale_all_dim) {
        out.attention_factor =
            get_mscale(rope.factor, *rope.mscale) / get_mscale(rope.factor, *rope.mscale_all_dim);
      } else {
        out.attention_factor = get_mscale(rope.factor, 1.0);
      }
      const double max_pos = static_cast<double>(rope.original_max_positions);
      const auto correction_dim = [&](double rotations) {
        return (static_cast<double>(dim) *
                std::log(max_pos / (rotations * 2.0 * std::numbers::pi))) /
               (2.0 * std::log(rope.theta));
      };
      double low = correction_dim(rope.beta_fast);
      double high = correction_dim(rope.beta_slow);
      if (rope.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < half; ++i) {
        const double extrapolation = out.inv_freq[i];
        const double interpolation = extrapolation / rope.factor;
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation_factor = 1.0 - ramp;
        out.inv_freq[i] =
            interpolation * (1.0 - extrapolation_factor) + extrapolation * extrapolation_factor;
      }
      break;
    }
  }
  return out;
}

}  // namespace qlinear
