#include "quantize/output_dir.h"

#include <filesystem>

#include "io/output_file.h"

namespace qlinear::quantize {
namespace {

namespace fs = std::filesystem;

// What a loader reads from a checkpoint folder: stale copies would be loaded with ours.
bool is_checkpoint_file(const std::string& name) {
  return name == "config.json" || name == "quant_config.json" || name == "quantize_config.json" ||
         name == "quantization_config.json" || name == "model.safetensors.index.json" ||
         name.ends_with(".safetensors");
}

}  // namespace

Result<OutputDir> OutputDir::prepare(const std::string& out, const std::string& model_dir,
                                     bool force) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) {
      return make_error(ErrorCode::kInvalidArgument, "--out {}: exists and is not a directory",
                        out);
    }
    if (fs::equivalent(out, model_dir, ec)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--out {}: is the --model folder; write the quantized checkpoint "
                        "elsewhere",
                        out);
    }
    if (!fs::is_empty(out, ec)) {
      if (!force) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--out {}: exists and is not empty; choose a new folder or pass --force "
                          "to replace its checkpoint files",
                          out);
      }
      for (const auto& entry : fs::directory_iterator(out, ec)) {
        if (entry.is_regular_file() && is_checkpoint_file(entry.path().filename().string())) {
          fs::remove(entry.path(), ec);
          if (ec) {
            return make_error(ErrorCode::kIo, "{}: cannot remove: {}", entry.path().string(),
                              ec.message());
          }
        }
      }
    }
  } else {
    fs::create_directories(out, ec);
    if (ec) return make_error(ErrorCode::kIo, "--out {}: cannot create: {}", out, ec.message());
  }
  OutputDir dir;
  dir.path_ = out;
  return dir;
}

Status OutputDir::write_file(const std::string& name, std::string_view bytes) {
  return write_output_file(path_ + "/" + name, bytes);
}

}  // namespace qlinear::quantize
