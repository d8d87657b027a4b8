// The --out folder: created when missing, refused when it holds anything unless --force (then
// only the files a checkpoint loader would read are replaced or removed), never the model
// folder itself. Files go through io/output_file (a temporary file beside the target, renamed
// into place), so a reader never sees half a file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::quantize {

class OutputDir {
 public:
  static Result<OutputDir> prepare(const std::string& out, const std::string& model_dir,
                                   bool force);
  const std::string& path() const { return path_; }
  // Writes `bytes` into path()/name.
  Status write_file(const std::string& name, std::string_view bytes);

 private:
  std::string path_;
};

}  // namespace qlinear::quantize
