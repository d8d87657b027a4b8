// The one place qlinear writes files. A new file or a regular file is written to a temporary
// file beside it, fsync'ed and renamed over it, so a failed write never leaves half a file and
// a reader never sees one. Anything else at the path is refused with the reason: a directory
// always; a symbolic link, a device node, a FIFO or a socket unless `write_through` is set
// (`layer --force-output`), in which case a link's target is written (replaced the same way when
// it is a regular file) and a device or FIFO is written in place (e.g. /dev/null). Without
// this, `--output /dev/null` run as root would replace /dev/null with a regular file.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear {

struct OutputOptions {
  bool write_through = false;  // write through links and into devices/FIFOs instead of refusing
};

class OutputFile {
 public:
  // Decides how `path` is written (see above) and opens the file to write to.
  static Result<OutputFile> create(const std::string& path, const OutputOptions& options = {});
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Without commit(), the temporary file is removed and the target left as it was.
  ~OutputFile();

  Status write(std::span<const std::byte> bytes);
  Status write(std::string_view text);
  // fsync, close and rename into place (or just close, for a device written in place).
  Status commit();

 private:
  OutputFile() = default;
  std::string path_;    // as the caller named it, for messages
  std::string target_;  // what is replaced: path_, or a link's resolved target
  std::string temp_;    // "" when writing in place
  int fd_ = -1;
};

// Writes `text` to `path` through OutputFile.
Status write_output_file(const std::string& path, std::string_view text,
                         const OutputOptions& options = {});

}  // namespace qlinear
