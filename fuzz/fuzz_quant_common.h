// Shared by the quantization-config fuzz targets: parse a config (optionally forcing its
// quant_method, so each format's parser gets the whole input) against a fixed tensor catalog,
// then ask it about every kind of layer name.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "quant/quant_config_json.h"

namespace qlinear_fuzz {

inline const qlinear::TensorCatalog& fuzz_catalog() {
  static const qlinear::TensorCatalog catalog = [] {
    qlinear::TensorCatalog c;
    c.add("model.layers.0.self_attn.q_proj.qweight", qlinear::DType::kI32);
    c.add("model.layers.0.self_attn.q_proj.scales", qlinear::DType::kF16);
    c.add("model.layers.0.mlp.down_proj.weight", qlinear::DType::kBF16);
    c.add("model.layers.0.mlp.up_proj.weight_packed", qlinear::DType::kI32);
    c.add("model.layers.1.mlp.gate_proj.weight", qlinear::DType::kF8E4M3);
    c.add("lm_head.weight", qlinear::DType::kBF16);
    return c;
  }();
  return catalog;
}

inline void exercise_quant_config(const nlohmann::ordered_json& qc, std::string_view method) {
  nlohmann::ordered_json config = qc;
  if (!method.empty() && config.is_object()) config["quant_method"] = std::string(method);
  auto parsed =
      qlinear::parse_quant_config_json(config, "fuzz:quantization_config", fuzz_catalog());
  if (!parsed.ok()) return;
  (void)(*parsed)->summary();
  for (const char* layer :
       {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.qkv_proj",
        "model.layers.0.mlp.down_proj", "model.layers.0.mlp.up_proj",
        "model.layers.1.mlp.gate_proj", "model.layers.12.mlp.gate_up_proj", "lm_head", ""}) {
    (void)(*parsed)->skip_entry(layer);
    auto spec = (*parsed)->resolve(layer);
    if (spec.ok()) {
      (void)spec->describe();
      if (spec->int_spec) (void)qlinear::sym_setting_text(*spec->int_spec);
    }
  }
}

}  // namespace qlinear_fuzz
