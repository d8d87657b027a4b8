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

  // Opens `dir`: the shards model.safetensors.index.json lists, else model.safetensors; other
  // *.safetensors files are ignored, as Hugging Face ignores them (docs/design.md). Every file is
  // opened once through ModelDir (io/model_files.h): regular files inside the folder only, JSON
  // files at most kMaxJsonFileBytes. Errors: missing directory or config.json, a file that is a
  // directory / FIFO / device / dangling link / loop / outside the folder, bad JSON (file and
  // position named), an index with an empty weight_map or a shard name outside the folder, a
  // missing shard, a tensor listed twice, a tensor in the index but not in its shard, a tensor in
  // two files, no model.safetensors and no index (the error names the other
  // *.safetensors files present and the rule).
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
  // The same with the key order of the file (GPTQ `dynamic` rules are tried in written order).
  const nlohmann::ordered_json& quant_config_ordered() const;
  // Where quant_config() came from, for messages: "config.json:quantization_config",
  // "quantize_config.json", or "" when there is none.
  const std::string& quant_config_source() const { return quant_config_source_; }
  // The quantization config files that were looked for, for messages about a missing one:
  // "config.json:quantization_config, quantization_config.json, ...".
  static std::string quant_config_places();
  // True when the tensors came from model.safetensors.index.json's shards.
  bool indexed() const { return indexed_; }

  std::vector<std::string> tensor_names() const;  // sorted
  std::optional<TensorRef> find(std::string_view name) const;
  // NotFound error naming the tensor and the checkpoint directory.
  Result<TensorRef> get(std::string_view name) const;
  const std::vector<std::shared_ptr<const SafetensorsFile>>& files() const { return files_; }
  uint64_t bytes_on_disk() const;
  // SafetensorsFile::release_pages of every file: their pages leave the resident set (the loader
  // calls it between layers; later reads fault them back in).
  void release_pages() const;

 private:
  Checkpoint();
  std::string dir_;
  std::unique_ptr<nlohmann::json> config_;
  std::unique_ptr<nlohmann::json> quant_config_;
  std::unique_ptr<nlohmann::ordered_json> quant_config_ordered_;
  std::string quant_config_source_;
  bool indexed_ = false;
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::vector<TensorRef> refs_;  // sorted by name
};

// Reads and parses a JSON file the user named (regular file, at most kMaxJsonFileBytes); errors
// name the file and the parse position.
Result<nlohmann::json> read_json_file(const std::string& path);

// An optional JSON file of the model folder `dir` (generation_config.json), through ModelDir's
// policy: nullopt when nothing has that name; a directory, FIFO, dangling link, file outside the
// folder or over kMaxJsonFileBytes is an error naming it, as are its parse errors.
Result<std::optional<nlohmann::json>> read_optional_model_json(const std::string& dir,
                                                               std::string_view name);

}  // namespace qlinear
