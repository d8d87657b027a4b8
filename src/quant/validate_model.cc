#include "quant/validate_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/log.h"
#include "io/checkpoint.h"
#include "io/shard_index.h"
#include "quant/model_layout.h"

namespace qlinear {
namespace {

constexpr std::size_t kMaxListed = 8;  // orphans named in one message

// Every tensor suffix some format's layer reads; a tensor ending in one of these that no layer
// reads is an orphan whatever the architecture.
constexpr std::string_view kQuantRoles[] = {"qweight",
                                            "qzeros",
                                            "scales",
                                            "g_idx",
                                            "weight_packed",
                                            "weight_scale",
                                            "weight_zero_point",
                                            "weight_g_idx",
                                            "weight_shape",
                                            "weight_scale_inv",
                                            "input_scale"};

std::string prefix_of(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(name.substr(0, dot));
}

std::string_view leaf_of(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

bool is_quant_role(std::string_view suffix) {
  return std::find(std::begin(kQuantRoles), std::end(kQuantRoles), suffix) != std::end(kQuantRoles);
}

// The tensor a layer of `spec` cannot do without.
std::string_view primary_role(const QuantSpec& spec) {
  if (spec.quantized && spec.int_spec) {
    return spec.int_spec->packing == IntPacking::kCtPacked ? "weight_packed" : "qweight";
  }
  return "weight";
}

// Check 1: a quantized layer read as dense because no quantization config was found (or the
// config skips a layer the checkpoint stores packed).
Status check_dense_layers_are_dense(const Checkpoint& ckpt, const QuantConfig& config,
                                    const std::vector<LinearLayer>& layers) {
  const bool unquantized = config.format() == QuantFormat::kUnquantized;
  for (const LinearLayer& layer : layers) {
    for (const QuantSpec& spec : layer.specs) {
      if (spec.quantized || (spec.fp8_spec && spec.fp8_spec->online)) continue;
      const std::string& p = spec.layer;
      std::string packed;
      for (const char* role : {"qweight", "weight_packed"}) {
        if (ckpt.find(p + "." + role)) packed = p + "." + role;
      }
      const auto weight = ckpt.find(p + ".weight");
      const bool fp8 =
          weight && (weight->dtype() == DType::kF8E4M3 || weight->dtype() == DType::kF8E5M2);
      if (packed.empty() && !fp8) continue;
      if (weight && !fp8) continue;  // a dense copy next to packed data: orphans say so
      const std::string stored =
          fp8 ? fmt::format("{} is {}", weight->name(), dtype_name(weight->dtype()))
              : fmt::format("{} holds packed integer codes", packed);
      if (unquantized) {
        return make_error(ErrorCode::kNotFound,
                          "{}: no quantization config found (looked for {}), but {}: the "
                          "checkpoint is quantized and its quantization config is missing",
                          ckpt.dir(), Checkpoint::quant_config_places(), stored);
      }
      return make_error(ErrorCode::kMisconfigured,
                        "layer {}: the quantization config ({}) leaves it unquantized ({}), but "
                        "{} and there is no dense {}.weight",
                        p, ckpt.quant_config_source(), spec.skip_reason, stored, p);
    }
  }
  return Status::ok_status();
}

// model.layers.<i>.<rest>: i, or nullopt for other names (an absurd i is returned as is).
std::optional<int64_t> decoder_index(std::string_view name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  int64_t index = 0;
  std::size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') {
    if (index < (int64_t{1} << 40)) index = index * 10 + (name[digits] - '0');
    ++digits;
  }
  if (digits == 0 || digits >= name.size() || name[digits] != '.') return std::nullopt;
  return index;
}

std::string index_hint(const Checkpoint& ckpt) {
  return ckpt.indexed()
             ? fmt::format(
                   " (the tensors come from the shards {} lists: is a shard missing from "
                   "its weight_map?)",
                   kShardIndexName)
             : std::string();
}

// Check 2.
Status check_layer_count(const Checkpoint& ckpt, const ModelDims& d, std::string_view where) {
  std::map<int64_t, std::string> first_tensor;  // decoder index -> a tensor of it
  for (const std::string& name : ckpt.tensor_names()) {
    if (auto i = decoder_index(name)) first_tensor.emplace(*i, name);
  }
  if (!first_tensor.empty() && first_tensor.rbegin()->first >= d.num_layers) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: \"num_hidden_layers\" = {} contradicts tensor {} (decoder layer {} "
                      "exists, so there are at least {})",
                      where, d.num_layers, first_tensor.rbegin()->second,
                      first_tensor.rbegin()->first, first_tensor.rbegin()->first + 1);
  }
  for (int64_t i = 0; i < d.num_layers; ++i) {
    if (first_tensor.count(i) == 0) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: \"num_hidden_layers\" = {}, but no tensor of decoder layer {} "
                        "(model.layers.{}.*) exists{}",
                        where, d.num_layers, i, i, index_hint(ckpt));
    }
  }
  return Status::ok_status();
}

struct ArchTensors {
  std::set<std::string> reads;      // non-linear tensors the architecture reads
  std::set<std::string> ignored;    // tolerated and unused
  std::vector<std::string> linear;  // unfused linear layers it needs, in model order
};

ArchTensors arch_tensors(ModelFamily family, const ModelDims& d) {
  ArchTensors a;
  a.reads.insert("model.embed_tokens.weight");
  a.reads.insert("model.norm.weight");
  for (int64_t i = 0; i < d.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    a.reads.insert(p + "input_layernorm.weight");
    a.reads.insert(p + "post_attention_layernorm.weight");
    if (family == ModelFamily::kQwen3) {
      a.reads.insert(p + "self_attn.q_norm.weight");
      a.reads.insert(p + "self_attn.k_norm.weight");
    }
    // Older Llama exports saved the RoPE table; transformers ignores it on load, so do we.
    a.ignored.insert(p + "self_attn.rotary_emb.inv_freq");
    // FP8 KV-cache scales (llm-compressor kv_cache_scheme; AutoFP8's output_scale): qlinear
    // keeps the KV cache in 16 bits, so nothing reads them.
    for (const char* scale : {"self_attn.k_scale", "self_attn.v_scale", "self_attn.q_scale",
                              "self_attn.prob_scale", "self_attn.k_proj.output_scale",
                              "self_attn.v_proj.output_scale", "self_attn.q_proj.output_scale"}) {
      a.ignored.insert(p + scale);
    }
    for (const char* leaf : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                             "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
      a.linear.push_back(p + leaf);
    }
  }
  if (!d.tie_word_embeddings) a.linear.emplace_back("lm_head");
  return a;
}

// Check 3: tensors no layer reads.
Status check_orphans(const Checkpoint& ckpt, const std::vector<LinearLayer>& layers,
                     const ArchTensors* arch) {
  std::set<std::string> consumed;
  std::map<std::string, const QuantSpec*> spec_of;  // planned shard -> spec
  for (const LinearLayer& layer : layers) {
    for (const QuantSpec& spec : layer.specs) {
      spec_of[spec.layer] = &spec;
      for (std::string_view role : layer_tensor_roles(spec)) {
        consumed.insert(spec.layer + "." + std::string(role));
      }
    }
  }
  std::vector<std::string> orphans;
  for (const std::string& name : ckpt.tensor_names()) {
    if (consumed.count(name) != 0) continue;
    if (arch != nullptr) {
      if (arch->reads.count(name) != 0 || arch->ignored.count(name) != 0) continue;
    } else if (!is_quant_role(leaf_of(name))) {
      continue;  // unknown architecture: only quantization tensors must belong to a layer
    }
    orphans.push_back(name);
  }
  if (orphans.empty()) return Status::ok_status();

  // Say why, for prefixes that look like a linear layer missing its main tensor.
  std::map<std::string, std::vector<std::string>> by_prefix;
  for (const std::string& name : orphans) {
    by_prefix[prefix_of(name)].emplace_back(leaf_of(name));
  }
  std::string why;
  for (const auto& [prefix, leaves] : by_prefix) {
    const bool quant = std::any_of(leaves.begin(), leaves.end(),
                                   [](const std::string& l) { return is_quant_role(l); });
    if (!quant || spec_of.count(prefix) != 0) continue;
    why = fmt::format("; {} has {} but no qweight, weight_packed or 2-D weight, so it is no layer",
                      prefix, fmt::join(leaves, ", "));
    break;
  }
  if (why.empty()) {
    for (const auto& [prefix, leaves] : by_prefix) {
      const auto it = spec_of.find(prefix);
      if (it == spec_of.end()) continue;
      why = fmt::format("; layer {} is {} and does not read {}", prefix, it->second->describe(),
                        fmt::join(leaves, ", "));
      break;
    }
  }
  std::vector<std::string> listed(orphans.begin(),
                                  orphans.begin() + std::min(orphans.size(), kMaxListed));
  return make_error(ErrorCode::kMisconfigured, "{}: {} tensor(s) belong to no layer: {}{}{}",
                    ckpt.dir(), orphans.size(), fmt::join(listed, ", "),
                    orphans.size() > kMaxListed ? ", ..." : "", why);
}

// Check 4.
Status check_complete(const Checkpoint& ckpt, const std::vector<LinearLayer>& layers,
                      const ArchTensors& arch, std::string_view architecture,
                      std::string_view where) {
  std::set<std::string> planned;
  for (const LinearLayer& layer : layers) planned.insert(layer.shards.begin(), layer.shards.end());
  for (const std::string& name : arch.reads) {
    if (!ckpt.find(name)) {
      return make_error(ErrorCode::kNotFound, "{}: tensor {} is missing ({} needs it){}",
                        ckpt.dir(), name, architecture, index_hint(ckpt));
    }
  }
  for (const std::string& name : arch.linear) {
    if (planned.count(name) != 0) continue;
    const std::string tied =
        name == "lm_head" ? fmt::format(" and {} has no \"tie_word_embeddings\": true", where) : "";
    return make_error(ErrorCode::kNotFound,
                      "{}: linear layer {} is missing: no {}.weight, .qweight or .weight_packed "
                      "tensor{} ({} needs it){}",
                      ckpt.dir(), name, name, tied, architecture, index_hint(ckpt));
  }
  const std::set<std::string> needed(arch.linear.begin(), arch.linear.end());
  for (const std::string& name : planned) {
    if (needed.count(name) != 0) continue;
    if (name == "lm_head") continue;  // tied embeddings with an explicit head: harmless
    return make_error(ErrorCode::kMisconfigured,
                      "{}: {} looks like a linear layer (it has a weight or qweight tensor), but "
                      "{} has no such layer",
                      ckpt.dir(), name, architecture);
  }
  return Status::ok_status();
}

struct Dims2 {
  int64_t k = 0;
  int64_t n = 0;
  std::string tensor;  // "name [a, b]" and how K/N were read, for messages
};

// K and N of a planned shard from its stored tensors; nullopt when they cannot be read (the
// converter then reports the tensor itself).
std::optional<Dims2> stored_dims(const Checkpoint& ckpt, const QuantSpec& spec) {
  const std::string name = spec.layer + "." + std::string(primary_role(spec));
  const auto ref = ckpt.find(name);
  if (!ref || ref->shape().size() != 2) return std::nullopt;
  const Shape& s = ref->shape();
  Dims2 d;
  d.tensor = fmt::format("{} {}", name, shape_to_string(s));
  if (spec.quantized && spec.int_spec) {
    const int bits = spec.int_spec->bits;
    if (bits <= 0 || 32 % bits != 0) return std::nullopt;
    const int64_t pf = 32 / bits;
    switch (spec.int_spec->packing) {
      case IntPacking::kGptq:
        d.k = s[0] * pf;
        d.n = s[1];
        d.tensor += fmt::format(" (GPTQ [K/{}, N] at bits={})", pf, bits);
        break;
      case IntPacking::kAwq:
        d.k = s[0];
        d.n = s[1] * pf;
        d.tensor += fmt::format(" (AWQ [K, N/{}] at bits={})", pf, bits);
        break;
      case IntPacking::kCtPacked:
        d.k = s[1] * pf;
        d.n = s[0];
        d.tensor += fmt::format(" (pack-quantized [N, K/{}] at bits={})", pf, bits);
        break;
    }
    return d;
  }
  d.n = s[0];
  d.k = s[1];
  d.tensor += " ([N, K])";
  return d;
}

struct Expect {
  int64_t value;
  std::string keys;  // "\"hidden_size\" = 256"
};

Status mismatch(std::string_view where, const Expect& e, std::string_view what,
                std::string_view layer, int64_t got, const std::string& tensor) {
  return make_error(ErrorCode::kMisconfigured,
                    "{}: {} means {} {} for {}, but tensor {} holds {}: the config contradicts "
                    "the checkpoint",
                    where, e.keys, e.value, what, layer, tensor, got);
}

// The order config sizes are checked in: each size against its most direct witness first.
int check_rank(std::string_view leaf) {
  constexpr std::string_view kOrder[] = {"q_proj",  "k_proj",    "v_proj",   "o_proj",
                                         "up_proj", "gate_proj", "down_proj"};
  for (std::size_t i = 0; i < std::size(kOrder); ++i) {
    if (leaf == kOrder[i]) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

// Check 5.
Status check_shapes(const Checkpoint& ckpt, const std::vector<LinearLayer>& layers,
                    const ModelDims& d, bool qwen3, std::string_view where) {
  const Expect hidden{d.hidden_size, fmt::format("\"hidden_size\" = {}", d.hidden_size)};
  const Expect inter{d.intermediate_size,
                     fmt::format("\"intermediate_size\" = {}", d.intermediate_size)};
  const Expect vocab{d.vocab_size, fmt::format("\"vocab_size\" = {}", d.vocab_size)};
  const std::string head_dim_text =
      d.head_dim_given
          ? fmt::format("\"head_dim\" = {}", d.head_dim)
          : fmt::format("head_dim = hidden_size / num_attention_heads = {}", d.head_dim);
  const Expect q_out{d.num_heads * d.head_dim, fmt::format("\"num_attention_heads\" = {} with {}",
                                                           d.num_heads, head_dim_text)};
  const Expect kv_out{
      d.num_kv_heads * d.head_dim,
      fmt::format("\"num_key_value_heads\" = {}{} with {}", d.num_kv_heads,
                  d.kv_heads_given ? "" : " (defaulted to num_attention_heads)", head_dim_text)};
  const Expect head{d.head_dim, head_dim_text};

  // Embeddings first: the most direct witness of hidden_size and vocab_size.
  if (const auto embed = ckpt.find("model.embed_tokens.weight")) {
    const Shape& s = embed->shape();
    const std::string t = fmt::format("{} {}", embed->name(), shape_to_string(s));
    if (s.size() != 2) {
      return make_error(ErrorCode::kMisconfigured, "tensor {}: must be 2-D [vocab_size, hidden]",
                        t);
    }
    if (s[1] != d.hidden_size) {
      return mismatch(where, hidden, "features (dim 1)", "the embeddings", s[1], t);
    }
    if (s[0] != d.vocab_size) {
      return mismatch(where, vocab, "rows (dim 0)", "the embeddings", s[0], t);
    }
  }
  for (const std::string& name : ckpt.tensor_names()) {
    const std::string prefix = prefix_of(name);  // leaf_of views into it
    const std::string_view leaf = leaf_of(prefix);
    const bool norm = leaf == "input_layernorm" || leaf == "post_attention_layernorm" ||
                      name == "model.norm.weight";
    const bool head_norm = qwen3 && (leaf == "q_norm" || leaf == "k_norm");
    if (!(norm || head_norm) || leaf_of(name) != "weight") continue;
    const auto ref = ckpt.find(name);
    const Expect& e = norm ? hidden : head;
    if (ref->shape() != Shape{e.value}) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: {} contradicts tensor {} {}: a norm weight must be [{}]", where,
                        e.keys, name, shape_to_string(ref->shape()), e.value);
    }
  }
  std::vector<const QuantSpec*> specs;
  for (const LinearLayer& layer : layers) {
    for (const QuantSpec& spec : layer.specs) specs.push_back(&spec);
  }
  std::stable_sort(specs.begin(), specs.end(), [](const QuantSpec* a, const QuantSpec* b) {
    return check_rank(leaf_of(a->layer)) < check_rank(leaf_of(b->layer));
  });
  for (const QuantSpec* spec : specs) {
    const std::string_view leaf = leaf_of(spec->layer);
    const Expect* k = nullptr;
    const Expect* n = nullptr;
    if (leaf == "q_proj") {
      k = &hidden, n = &q_out;
    } else if (leaf == "k_proj" || leaf == "v_proj") {
      k = &hidden, n = &kv_out;
    } else if (leaf == "o_proj") {
      k = &q_out, n = &hidden;
    } else if (leaf == "gate_proj" || leaf == "up_proj") {
      k = &hidden, n = &inter;
    } else if (leaf == "down_proj") {
      k = &inter, n = &hidden;
    } else if (spec->layer == "lm_head") {
      k = &hidden, n = &vocab;
    } else {
      continue;
    }
    const std::optional<Dims2> s = stored_dims(ckpt, *spec);
    if (!s) continue;
    if (s->n != n->value) {
      return mismatch(where, *n, "output features (N)", spec->layer, s->n, s->tensor);
    }
    if (s->k != k->value) {
      return mismatch(where, *k, "input features (K)", spec->layer, s->k, s->tensor);
    }
  }
  return Status::ok_status();
}

}  // namespace

std::vector<std::string_view> layer_tensor_roles(const QuantSpec& spec) {
  if (spec.quantized && spec.int_spec) {
    switch (spec.int_spec->packing) {
      case IntPacking::kGptq:
        return {"qweight", "qzeros", "scales", "g_idx", "bias"};
      case IntPacking::kAwq:
        return {"qweight", "qzeros", "scales", "bias"};
      case IntPacking::kCtPacked:
        return {"weight_packed", "weight_scale", "weight_zero_point",
                "weight_g_idx",  "weight_shape", "bias"};
    }
  }
  if (spec.quantized && spec.fp8_spec && !spec.fp8_spec->online) {
    return {"weight", spec.fp8_spec->scale_name, "input_scale", "bias"};
  }
  return {"weight", "bias"};
}

Status validate_model(const Checkpoint& checkpoint, const QuantConfig& config,
                      const std::vector<LinearLayer>& layers) {
  const std::string where = checkpoint.dir() + "/config.json";
  QL_RETURN_IF_ERROR(check_dense_layers_are_dense(checkpoint, config, layers));
  QL_ASSIGN_OR_RETURN(const ModelLayout layout, read_model_layout(checkpoint.config(), where));
  if (!layout.dims) {
    log_warn(
        "{}: architecture \"{}\" is not one qlinear knows (Llama, Mistral, Qwen2, Qwen3): "
        "its layers and config sizes are not checked",
        checkpoint.dir(), layout.architecture.empty() ? "?" : layout.architecture);
    return check_orphans(checkpoint, layers, nullptr);
  }
  const ModelDims& d = *layout.dims;
  QL_RETURN_IF_ERROR(check_layer_count(checkpoint, d, where));
  const ArchTensors arch = arch_tensors(layout.family, d);
  QL_RETURN_IF_ERROR(check_orphans(checkpoint, layers, &arch));
  QL_RETURN_IF_ERROR(
      check_complete(checkpoint, layers, arch, model_family_name(layout.family), where));
  return check_shapes(checkpoint, layers, d, layout.family == ModelFamily::kQwen3, where);
}

}  // namespace qlinear
