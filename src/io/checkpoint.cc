// Opening a checkpoint folder: config.json, the quantization config wherever it lives, and the
// tensors of every safetensors file, each name owned by exactly one file. Every file is opened
// once, through ModelDir.
#include "io/checkpoint.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/escape.h"
#include "core/log.h"
#include "io/json_text.h"
#include "io/model_files.h"
#include "io/shard_index.h"

namespace qlinear {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Where older tools put the quantization config, in the order they are tried.
constexpr const char kSingleFileName[] = "model.safetensors";

constexpr const char* kQuantConfigFiles[] = {"quantization_config.json", "quant_config.json",
                                             "quantize_config.json"};

Result<ordered_json> read_json_member(const ModelDir& dir, std::string_view name) {
  QL_ASSIGN_OR_RETURN(const ReadFile file, dir.open_file(name, kMaxJsonFileBytes, "JSON file"));
  QL_ASSIGN_OR_RETURN(const std::string text, read_whole_file(file, kMaxJsonFileBytes));
  return io_internal::parse_ordered_json_text(text, file.path(),
                                              io_internal::DuplicateKeys::kAllow);
}

// Without an index, the one file Hugging Face loads: model.safetensors. Other *.safetensors
// entries (Mistral's consolidated.safetensors beside it, a user's own files) are ignored, not
// loaded. A folder with only other names is an error naming them and the rule: guessing which
// one holds the model would load the wrong weights as readily as the right ones.
Result<std::vector<std::string>> single_file_checkpoint(const ModelDir& dir) {
  if (dir.contains(kSingleFileName)) {
    QL_ASSIGN_OR_RETURN(const std::vector<std::string> all, dir.list(".safetensors"));
    std::string ignored;
    for (const std::string& name : all) {
      if (name == kSingleFileName) continue;
      ignored += fmt::format("{}{}", ignored.empty() ? "" : ", ", escape_for_terminal(name));
    }
    if (!ignored.empty()) {
      log_verbose("files", "{}: ignoring {} (not {} and no {}; not loaded)", dir.path(), ignored,
                  kSingleFileName, kShardIndexName);
    }
    return std::vector<std::string>{kSingleFileName};
  }
  QL_ASSIGN_OR_RETURN(const std::vector<std::string> others, dir.list(".safetensors"));
  if (others.empty()) {
    return make_error(ErrorCode::kNotFound, "{}: no {} and no {}", dir.path(), kSingleFileName,
                      kShardIndexName);
  }
  std::string names;
  for (std::size_t i = 0; i < others.size() && i < 8; ++i) {
    names += fmt::format("{}{}", i == 0 ? "" : ", ", escape_for_terminal(others[i]));
  }
  if (others.size() > 8) names += fmt::format(" and {} more", others.size() - 8);
  return make_error(ErrorCode::kNotFound,
                    "{}: no {} and no {}, only {}: qlinear loads the files Hugging Face does "
                    "(the index's shards, else {}) and ignores other *.safetensors files; rename "
                    "the model's file to {} or list its shards in {}",
                    dir.path(), kSingleFileName, kShardIndexName, names, kSingleFileName,
                    kSingleFileName, kShardIndexName);
}

}  // namespace

std::string TensorRef::where() const {
  return fmt::format("{}: \"{}\"", file->file_name(), info->name);
}

Checkpoint::Checkpoint() = default;
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

const nlohmann::json& Checkpoint::config() const { return *config_; }
const nlohmann::json& Checkpoint::quant_config() const { return *quant_config_; }
const nlohmann::ordered_json& Checkpoint::quant_config_ordered() const {
  return *quant_config_ordered_;
}

std::string Checkpoint::quant_config_places() {
  std::string places = "config.json:quantization_config";
  for (const char* name : kQuantConfigFiles) places += fmt::format(", {}", name);
  return places;
}

Result<Checkpoint> Checkpoint::open(const std::string& dir, const ProgressFn& progress) {
  QL_ASSIGN_OR_RETURN(const ModelDir root, ModelDir::open(dir));
  Checkpoint ckpt;
  ckpt.dir_ = dir;

  QL_ASSIGN_OR_RETURN(ordered_json config, read_json_member(root, "config.json"));
  if (!config.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: top level is a JSON {}, expected an object",
                      root.path_of("config.json"), config.type_name());
  }

  ckpt.quant_config_ordered_ = std::make_unique<ordered_json>(nullptr);
  for (const char* key : {"quantization_config", "compression_config"}) {
    const auto it = config.find(key);
    if (it != config.end() && !it->is_null()) {
      *ckpt.quant_config_ordered_ = *it;
      ckpt.quant_config_source_ = std::string("config.json:") + key;
      break;
    }
  }
  if (ckpt.quant_config_source_.empty()) {
    for (const char* name : kQuantConfigFiles) {
      if (!root.contains(name)) continue;
      QL_ASSIGN_OR_RETURN(*ckpt.quant_config_ordered_, read_json_member(root, name));
      ckpt.quant_config_source_ = name;
      break;
    }
  }
  ckpt.config_ = std::make_unique<json>(config);
  ckpt.quant_config_ = std::make_unique<json>(*ckpt.quant_config_ordered_);

  // Which files to open, and (with an index) which tensor each file must hold.
  ShardIndex index;
  std::vector<std::string> file_names;
  ckpt.indexed_ = root.contains(kShardIndexName);
  if (ckpt.indexed_) {
    QL_ASSIGN_OR_RETURN(const ReadFile file,
                        root.open_file(kShardIndexName, kMaxJsonFileBytes, "JSON file"));
    QL_ASSIGN_OR_RETURN(const std::string text, read_whole_file(file, kMaxJsonFileBytes));
    QL_ASSIGN_OR_RETURN(index, parse_shard_index(text, file.path()));
    for (const auto& [shard, tensor] : index.first_tensor) {
      if (!root.contains(shard)) {
        return make_error(ErrorCode::kNotFound,
                          "{}: missing shard {} listed in {} for tensor \"{}\"", dir, shard,
                          kShardIndexName, tensor);
      }
      file_names.push_back(shard);
    }
  } else {
    QL_ASSIGN_OR_RETURN(file_names, single_file_checkpoint(root));
  }

  std::vector<ReadFile> handles;
  uint64_t total = 0;
  for (const auto& name : file_names) {
    QL_ASSIGN_OR_RETURN(ReadFile file, root.open_file(name, kNoSizeLimit, "safetensors file"));
    total += file.size();
    handles.push_back(std::move(file));
  }
  uint64_t done = 0;
  std::map<std::string, const SafetensorsFile*, std::less<>> owner;  // tensor -> its file
  for (const ReadFile& handle : handles) {
    QL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(handle));
    for (const TensorInfo& info : file->tensors()) {
      const auto [it, inserted] = owner.emplace(info.name, file.get());
      if (!inserted) {
        return make_error(ErrorCode::kCorrupt, "{}: tensor \"{}\" is in both {} and {}", dir,
                          info.name, it->second->file_name(), file->file_name());
      }
      ckpt.refs_.push_back(TensorRef{file.get(), &info});
    }
    done += file->file_size();
    ckpt.files_.push_back(std::move(file));
    if (progress) progress(done, std::max(total, done));
  }

  if (ckpt.indexed_) {
    for (const auto& [tensor, shard] : index.shard_of) {
      const auto it = owner.find(tensor);
      const std::string shard_file = shard.substr(shard.find_last_of('/') + 1);
      if (it == owner.end() || it->second->file_name() != shard_file) {
        return make_error(
            ErrorCode::kCorrupt, "{}: {} lists tensor \"{}\" in {}, but {} does not contain it{}",
            dir, kShardIndexName, tensor, shard, shard,
            it == owner.end() ? std::string() : " (it is in " + it->second->file_name() + ")");
      }
    }
    std::size_t unlisted = 0;
    std::string first_unlisted;
    for (const auto& [tensor, file] : owner) {
      if (index.shard_of.count(tensor) != 0) continue;
      if (unlisted++ == 0) first_unlisted = fmt::format("{}: \"{}\"", file->file_name(), tensor);
    }
    if (unlisted > 0) {
      log_warn("{}: {} tensor(s) are in shards but not in {} (first: {}); kept", dir, unlisted,
               kShardIndexName, first_unlisted);
    }
  }

  std::sort(ckpt.refs_.begin(), ckpt.refs_.end(),
            [](const TensorRef& a, const TensorRef& b) { return a.name() < b.name(); });
  return ckpt;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(refs_.size());
  for (const TensorRef& ref : refs_) names.push_back(ref.name());
  return names;
}

std::optional<TensorRef> Checkpoint::find(std::string_view name) const {
  const auto it = std::lower_bound(
      refs_.begin(), refs_.end(), name,
      [](const TensorRef& ref, std::string_view n) { return std::string_view(ref.name()) < n; });
  if (it == refs_.end() || it->name() != name) return std::nullopt;
  return *it;
}

Result<TensorRef> Checkpoint::get(std::string_view name) const {
  if (auto ref = find(name)) return *ref;
  return make_error(ErrorCode::kNotFound, "tensor \"{}\" not found in checkpoint {}",
                    escape_for_terminal(name), dir_);
}

void Checkpoint::release_pages() const {
  for (const auto& file : files_) file->release_pages();
}

uint64_t Checkpoint::bytes_on_disk() const {
  uint64_t total = 0;
  for (const auto& file : files_) total += file->file_size();
  return total;
}

Result<nlohmann::json> read_json_file(const std::string& path) {
  QL_ASSIGN_OR_RETURN(const ReadFile file, open_user_file(path, kMaxJsonFileBytes, ""));
  QL_ASSIGN_OR_RETURN(const std::string text, read_whole_file(file, kMaxJsonFileBytes));
  return io_internal::parse_json_text(text, path, io_internal::DuplicateKeys::kAllow);
}

Result<std::optional<nlohmann::json>> read_optional_model_json(const std::string& dir,
                                                               std::string_view name) {
  QL_ASSIGN_OR_RETURN(const ModelDir folder, ModelDir::open(dir));
  if (!folder.contains(name)) return std::optional<nlohmann::json>();
  QL_ASSIGN_OR_RETURN(const ReadFile file, folder.open_file(name, kMaxJsonFileBytes, "JSON file"));
  QL_ASSIGN_OR_RETURN(const std::string text, read_whole_file(file, kMaxJsonFileBytes));
  QL_ASSIGN_OR_RETURN(
      nlohmann::json json,
      io_internal::parse_json_text(text, folder.path_of(name), io_internal::DuplicateKeys::kAllow));
  return std::optional<nlohmann::json>(std::move(json));
}

}  // namespace qlinear
