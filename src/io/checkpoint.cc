// Opening a checkpoint folder: config.json, the quantization config wherever it lives, and the
// tensors of every safetensors file, each name owned by exactly one file.
#include "io/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "core/log.h"
#include "io/json_text.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
// Where older tools put the quantization config, in the order they are tried.
constexpr const char* kQuantConfigFiles[] = {"quantization_config.json", "quant_config.json",
                                             "quantize_config.json"};

bool file_exists(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// The shard files named by the index's weight_map, with the first tensor naming each (for
// messages); `listed` receives tensor -> shard file.
Result<std::map<std::string, std::string>> read_index(const fs::path& dir,
                                                      std::map<std::string, std::string>* listed) {
  const std::string index_path = (dir / kIndexName).string();
  QL_ASSIGN_OR_RETURN(std::string text, io_internal::read_text_file(index_path));
  std::vector<std::string> duplicate;
  auto index = io_internal::parse_json_text(text, index_path, io_internal::DuplicateKeys::kReject,
                                            &duplicate);
  if (!index.ok()) {
    if (duplicate.size() == 2 && duplicate[0] == "weight_map") {
      return make_error(ErrorCode::kCorrupt, "{}: tensor \"{}\" listed twice in weight_map",
                        index_path, duplicate[1]);
    }
    return index.status();
  }
  if (!index->is_object() || !index->contains("weight_map") ||
      !(*index)["weight_map"].is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: \"weight_map\" missing or not an object",
                      index_path);
  }
  std::map<std::string, std::string> shards;  // shard file -> first tensor listed in it
  for (const auto& [tensor, shard] : (*index)["weight_map"].items()) {
    if (!shard.is_string()) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: weight_map[\"{}\"] is {}, expected a shard file name", index_path,
                        tensor, shard.dump());
    }
    const auto& shard_name = shard.get_ref<const std::string&>();
    (*listed)[tensor] = shard_name;
    shards.emplace(shard_name, tensor);
  }
  for (const auto& [shard, tensor] : shards) {
    if (!file_exists(dir / shard)) {
      return make_error(ErrorCode::kNotFound, "{}: missing shard {} listed in {} for tensor \"{}\"",
                        dir.string(), shard, kIndexName, tensor);
    }
  }
  return shards;
}

Result<std::vector<std::string>> list_safetensors(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors" && file_exists(it->path())) {
      names.push_back(it->path().filename().string());
    }
  }
  if (ec) {
    return make_error(ErrorCode::kIo, "{}: cannot list directory: {}", dir.string(), ec.message());
  }
  if (names.empty()) {
    return make_error(ErrorCode::kNotFound, "{}: no *.safetensors file and no {}", dir.string(),
                      kIndexName);
  }
  std::sort(names.begin(), names.end());
  return names;
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

Result<Checkpoint> Checkpoint::open(const std::string& dir, const ProgressFn& progress) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    return make_error(ErrorCode::kNotFound, "{}: checkpoint directory does not exist", dir);
  }
  if (!fs::is_directory(root, ec)) {
    return make_error(ErrorCode::kInvalidArgument, "{}: not a directory", dir);
  }
  Checkpoint ckpt;
  ckpt.dir_ = dir;

  const std::string config_path = (root / "config.json").string();
  QL_ASSIGN_OR_RETURN(json config, read_json_file(config_path));
  if (!config.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: top level is a JSON {}, expected an object",
                      config_path, config.type_name());
  }
  ckpt.config_ = std::make_unique<json>(std::move(config));

  ckpt.quant_config_ = std::make_unique<json>(nullptr);
  for (const char* key : {"quantization_config", "compression_config"}) {
    const auto it = ckpt.config_->find(key);
    if (it != ckpt.config_->end() && !it->is_null()) {
      *ckpt.quant_config_ = *it;
      ckpt.quant_config_source_ = std::string("config.json:") + key;
      break;
    }
  }
  if (ckpt.quant_config_source_.empty()) {
    for (const char* name : kQuantConfigFiles) {
      if (!file_exists(root / name)) continue;
      QL_ASSIGN_OR_RETURN(*ckpt.quant_config_, read_json_file((root / name).string()));
      ckpt.quant_config_source_ = name;
      break;
    }
  }

  // Which files to open, and (with an index) which tensor each file must hold.
  std::map<std::string, std::string> listed;  // tensor -> shard, from the index
  std::vector<std::string> file_names;
  const bool indexed = file_exists(root / kIndexName);
  if (indexed) {
    QL_ASSIGN_OR_RETURN(auto shards, read_index(root, &listed));
    for (const auto& entry : shards) file_names.push_back(entry.first);
  } else {
    QL_ASSIGN_OR_RETURN(file_names, list_safetensors(root));
  }

  uint64_t total = 0;
  for (const auto& name : file_names) {
    const uintmax_t size = fs::file_size(root / name, ec);
    if (!ec) total += size;  // only feeds the progress bar; open() reports real errors
  }
  uint64_t done = 0;
  std::map<std::string, const SafetensorsFile*> owner;  // tensor -> the file holding it
  for (const auto& name : file_names) {
    QL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open((root / name).string()));
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

  if (indexed) {
    for (const auto& [tensor, shard] : listed) {
      const auto it = owner.find(tensor);
      if (it == owner.end() || it->second->file_name() != fs::path(shard).filename().string()) {
        return make_error(
            ErrorCode::kCorrupt, "{}: {} lists tensor \"{}\" in {}, but {} does not contain it{}",
            dir, kIndexName, tensor, shard, shard,
            it == owner.end() ? std::string() : " (it is in " + it->second->file_name() + ")");
      }
    }
    std::size_t unlisted = 0;
    std::string first_unlisted;
    for (const auto& [tensor, file] : owner) {
      if (listed.count(tensor) != 0) continue;
      if (unlisted++ == 0) first_unlisted = fmt::format("{}: \"{}\"", file->file_name(), tensor);
    }
    if (unlisted > 0) {
      log_warn("{}: {} tensor(s) are in shards but not in {} (first: {}); kept", dir, unlisted,
               kIndexName, first_unlisted);
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
  return make_error(ErrorCode::kNotFound, "tensor \"{}\" not found in checkpoint {}", name, dir_);
}

uint64_t Checkpoint::bytes_on_disk() const {
  uint64_t total = 0;
  for (const auto& file : files_) total += file->file_size();
  return total;
}

}  // namespace qlinear
