// A Hugging Face checkpoint folder: config.json, the quantization config wherever it lives, and
// the tensors of one model.safetensors or of the shards listed in model.safetensors.index.json.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/safetensors.h"

namespace qlinear {

// A tensor inside one of the checkpoint's files.
struct TensorRef {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = nullptr;
  const std::string& name() const { return info->name; }
  DType dtype() const { return info->dtype; }
  const Shape& shape() const { return info->shape; }
  std::span<const std::byte> bytes() const { return file->data(*info); }
  // "model-00001-of-00002.safetensors: \"model.layers.0.mlp.up_proj.qweight\"", for messages.
  std::string where() const;
};

class Checkpoint {
 public:
  // Called after each safetensors file is opened: (bytes done, bytes total).
  using ProgressFn = std::function<void(uint64_t, uint64_t)>;

  // Opens `dir`. Errors: missing directory or config.json, bad JSON (file and position named),
  // missing shard, a tensor listed twice, a tensor in the index but not in its shard, a tensor
  // in two files, no safetensors file at all.
  static Result<Checkpoint> open(const std::string& dir, const ProgressFn& progress = {});

  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  ~Checkpoint();

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const;  // config.json
  // The quantization config: config.json's "quantization_config" (or legacy
  // "compression_config"), else the first of quantization_config.json, quant_config.json,
  // quantize_config.json. A JSON null when the checkpoint is unquantized.
  const nlohmann::json& quant_config() const;
  // Where quant_config() came from, for messages: "config.json:quantization_config",
  // "quantize_config.json", or "" when there is none.
  const std::string& quant_config_source() const { return quant_config_source_; }

  std::vector<std::string> tensor_names() const;  // sorted
  std::optional<TensorRef> find(std::string_view name) const;
  // NotFound error naming the tensor and the checkpoint directory.
  Result<TensorRef> get(std::string_view name) const;
  const std::vector<std::shared_ptr<const SafetensorsFile>>& files() const { return files_; }
  uint64_t bytes_on_disk() const;

 private:
  Checkpoint();
  std::string dir_;
  std::unique_ptr<nlohmann::json> config_;
  std::unique_ptr<nlohmann::json> quant_config_;
  std::string quant_config_source_;
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::vector<TensorRef> refs_;  // sorted by name
};

// Reads and parses a JSON file; errors name the file and the parse position.
Result<nlohmann::json> read_json_file(const std::string& path);

}  // namespace qlinear
