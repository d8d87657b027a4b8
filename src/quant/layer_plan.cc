// Linear-layer discovery, q/k/v and gate/up fusion, and the fused-shard agreement rules of
// formats.md §2.
#include "quant/layer_plan.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "io/checkpoint.h"
#include "quant/validate_model.h"

namespace qlinear {
namespace {

struct Fusion {
  std::string_view fused;
  std::vector<std::string_view> shards;  // in N order
};

const std::vector<Fusion>& fusions() {
  static const std::vector<Fusion> kFusions = {
      {"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
      {"gate_up_proj", {"gate_proj", "up_proj"}},
  };
  return kFusions;
}

// Natural order: digit runs compare as numbers, so layers.2 sorts before layers.10.
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t ei = i;
      std::size_t ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string_view na = a.substr(i, ei - i);
      std::string_view nb = b.substr(j, ej - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return (a.size() - i) < (b.size() - j);
}

bool ends_with_component(std::string_view name, std::string_view suffix, std::string* prefix) {
  if (name.size() <= suffix.size() + 1 || !name.ends_with(suffix) ||
      name[name.size() - suffix.size() - 1] != '.') {
    return false;
  }
  *prefix = std::string(name.substr(0, name.size() - suffix.size() - 1));
  return true;
}

}  // namespace

std::vector<std::string> find_linear_layer_names(const Checkpoint& checkpoint) {
  std::set<std::string> prefixes;
  for (const auto& name : checkpoint.tensor_names()) {
    if (name.find("embed_tokens") != std::string::npos) continue;
    std::string prefix;
    if (ends_with_component(name, "qweight", &prefix) ||
        ends_with_component(name, "weight_packed", &prefix)) {
      prefixes.insert(prefix);
    } else if (ends_with_component(name, "weight", &prefix)) {
      auto ref = checkpoint.find(name);
      if (ref && ref->shape().size() == 2) prefixes.insert(prefix);
    }
  }
  return {prefixes.begin(), prefixes.end()};
}

namespace {

// The last dotted component of `name` and everything before it.
std::pair<std::string_view, std::string_view> split_last(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return {"", name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

std::string join(std::string_view parent, std::string_view leaf) {
  return parent.empty() ? std::string(leaf) : std::string(parent) + "." + std::string(leaf);
}

}  // namespace

std::vector<LinearLayer> group_linear_layers(const std::vector<std::string>& layer_names) {
  const std::set<std::string> prefixes(layer_names.begin(), layer_names.end());
  std::vector<LinearLayer> layers;
  std::set<std::string> used;
  for (const auto& prefix : prefixes) {
    if (used.count(prefix) != 0) continue;
    const auto [parent, leaf] = split_last(prefix);
    for (const auto& fusion : fusions()) {
      if (leaf != fusion.shards.front()) continue;
      std::vector<std::string> shards;
      for (std::string_view shard : fusion.shards) shards.push_back(join(parent, shard));
      const bool complete = std::all_of(shards.begin(), shards.end(), [&](const std::string& s) {
        return prefixes.count(s) != 0 && used.count(s) == 0;
      });
      if (!complete) continue;
      for (const auto& shard : shards) used.insert(shard);
      layers.push_back(LinearLayer{join(parent, fusion.fused), std::move(shards), {}, {}});
      break;
    }
  }
  // Shards are consumed when their first shard (q_proj, gate_proj) is reached; what is left
  // stands alone.
  for (const auto& prefix : prefixes) {
    if (used.count(prefix) == 0) layers.push_back(LinearLayer{prefix, {prefix}, {}, {}});
  }
  std::sort(layers.begin(), layers.end(), [](const LinearLayer& a, const LinearLayer& b) {
    return natural_less(a.name, b.name);
  });
  return layers;
}

namespace {

std::string shard_leaf(const std::string& shard) { return std::string(split_last(shard).second); }

}  // namespace

Status resolve_linear_layer(const QuantConfig& config, LinearLayer* layer) {
  layer->specs.clear();
  if (layer->shards.size() > 1) {
    if (auto reason = config.skip_entry(layer->name)) {
      for (const auto& shard : layer->shards) {
        QuantSpec spec;
        spec.layer = shard;
        spec.format = config.format();
        spec.skip_reason = "fused layer " + layer->name + " " + *reason;
        layer->specs.push_back(std::move(spec));
      }
      return Status::ok_status();
    }
  }
  for (const auto& shard : layer->shards) {
    auto spec = config.resolve(shard);
    if (!spec.ok()) return spec.status();
    layer->specs.push_back(std::move(spec).value());
  }
  if (std::string why = shard_disagreement(*layer); !why.empty()) {
    return make_error(ErrorCode::kMisconfigured, "layer {}: {}", layer->name, why);
  }
  return Status::ok_status();
}

std::string shard_disagreement(const LinearLayer& layer) {
  const QuantSpec& first = layer.specs.front();
  for (std::size_t i = 1; i < layer.specs.size(); ++i) {
    const QuantSpec& other = layer.specs[i];
    if (first.same_scheme(other)) continue;
    const std::string a = shard_leaf(layer.shards.front());
    const std::string b = shard_leaf(layer.shards[i]);
    if (first.quantized != other.quantized) {
      const QuantSpec& q = first.quantized ? first : other;
      const QuantSpec& d = first.quantized ? other : first;
      return fmt::format(
          "shards disagree: {} is quantized ({}) but {} is not ({}); all shards of a fused "
          "layer must be quantized alike",
          shard_leaf(q.layer), q.describe(), shard_leaf(d.layer), d.skip_reason);
    }
    return fmt::format(
        "shards disagree: {} is {} but {} is {}; all shards of a fused layer must be quantized "
        "alike",
        a, first.describe(), b, other.describe());
  }
  return "";
}

Result<std::vector<LinearLayer>> plan_linear_layers(const Checkpoint& checkpoint,
                                                    const QuantConfig& config) {
  std::vector<LinearLayer> planned;
  for (LinearLayer& layer : group_linear_layers(find_linear_layer_names(checkpoint))) {
    const Status status = resolve_linear_layer(config, &layer);
    if (status.ok()) {
      planned.push_back(std::move(layer));
      continue;
    }
    const std::string why = layer.specs.size() == layer.shards.size() && layer.shards.size() > 1
                                ? shard_disagreement(layer)
                                : std::string();
    if (why.empty()) return status;
    // Shards that cannot share a kernel call run one by one, each with its own spec.
    for (std::size_t i = 0; i < layer.shards.size(); ++i) {
      LinearLayer alone{layer.shards[i], {layer.shards[i]}, {layer.specs[i]}, {}};
      alone.unfused_reason = fmt::format("not fused into {}: {}", shard_leaf(layer.name), why);
      planned.push_back(std::move(alone));
    }
  }
  QL_RETURN_IF_ERROR(validate_model(checkpoint, config, planned));
  return planned;
}

}  // namespace qlinear
