// A checkpoint folder as a library user sees it: open it (any supported format), list its linear
// layers, explain which kernel each would get on a device, and load one layer ready to run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qlinear/device.h"
#include "qlinear/explain.h"
#include "qlinear/linear.h"
#include "qlinear/status.h"

namespace qlinear {

struct ModelOptions {
  // "" (the checkpoint's own quantization) or "fp8" (online FP8 of an unquantized checkpoint).
  std::string quantization;
};

struct LinearLayerInfo {
  std::string name;                 // fused name: "model.layers.0.self_attn.qkv_proj"
  std::vector<std::string> shards;  // the checkpoint's layers in it, in N order
  std::string scheme;               // "int4 g128 asym", "fp8 channel dyn-token", "dense bf16"
};

class Model {
 public:
  // Opens and validates `dir` (config.json, the quantization config, the safetensors files).
  static Result<Model> open(const std::string& dir, const ModelOptions& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::string& dir() const;
  // The linear layers as the runner fuses them (q/k/v, gate/up), in model order.
  const std::vector<LinearLayerInfo>& linear_layers() const;
  // The kernel per layer and range of M on `device` (detect_device or simulate_target).
  Result<ExplainReport> explain(const Device& device, const SelectionPolicy& policy,
                                const ExplainOptions& options = {}) const;
  // One layer (a fused name, or one of its shards: then the whole fused layer), converted and
  // prepared for `device`, rank `rank` of a `options.tp`-way tensor-parallel split.
  Result<Linear> load_linear(std::string_view name, const Device& device,
                             const LinearOptions& options, int rank = 0) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qlinear
