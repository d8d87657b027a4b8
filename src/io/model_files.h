// The one place qlinear opens files it reads. Model folders come from strangers, so every file
// is opened once, without blocking (a FIFO would otherwise hang the open), checked with fstat to
// be a regular file, bounded in size before a byte is read, and, inside a model folder, checked
// to resolve (after following links) to a file inside that folder. Errors name the file by the
// name the user or the index gave it and say what it is instead: a directory, a FIFO, a device,
// a dangling link, a link loop, a file outside the folder (ErrorCode::kRefusedFile, kNotFound).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear {

// The documented limit of every JSON file qlinear reads (config.json, the quantization configs,
// model.safetensors.index.json): real ones are kilobytes, tokenizer.json files tens of MB.
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;
// Text the user hands qlinear to tokenize (`tokenize --text-file`, `bench-tokenizer --text`).
inline constexpr uint64_t kMaxTextInputBytes = uint64_t{1} << 30;
inline constexpr uint64_t kNoSizeLimit = std::numeric_limits<uint64_t>::max();

// An open, fstat-checked regular file; the descriptor is closed on destruction.
class ReadFile {
 public:
  ReadFile() = default;
  ReadFile(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  // Takes `other`'s descriptor and name with a known size.
  ReadFile(ReadFile&& other, uint64_t size);
  ReadFile(ReadFile&& other) noexcept;
  ReadFile& operator=(ReadFile&& other) noexcept;
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;
  ~ReadFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }            // from fstat at open
  const std::string& path() const { return path_; }  // as named by the caller, for messages

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

// A path the user named directly (`layer --input`): links are followed (the user chose the
// path), but it must be a regular file of at most `max_bytes`. `role` names it in errors
// ("--input"; "" for the bare path).
Result<ReadFile> open_user_file(const std::string& path, uint64_t max_bytes, std::string_view role);

// The whole file (at most `max_bytes`; a file that grew past its fstat size is an error).
Result<std::string> read_whole_file(const ReadFile& file, uint64_t max_bytes);

// "is a directory", "is a FIFO (named pipe)", ... for a stat mode; "" for a regular file.
std::string_view file_type_problem(unsigned mode);

// A model folder. Names inside it (from qlinear itself, or from an index) are relative paths;
// what they resolve to must stay inside the folder. The one exception is the Hugging Face hub
// cache, where snapshots/<rev>/ holds links into the repository's blobs/ folder: that blobs/
// folder counts as inside.
class ModelDir {
 public:
  // `dir` must exist and be a directory (links to one are fine).
  static Result<ModelDir> open(const std::string& dir);

  const std::string& path() const { return dir_; }
  // The path of `name` inside the folder, for messages: "<dir>/<name>".
  std::string path_of(std::string_view name) const;
  // True when something (of any type, a dangling link included) is called `name`, so that a
  // FIFO or a dangling link named config.json is reported instead of treated as absent.
  bool contains(std::string_view name) const;
  // Opens `name` for reading under the rules above; `what` names the kind of file in the size
  // error ("JSON file").
  Result<ReadFile> open_file(std::string_view name, uint64_t max_bytes,
                             std::string_view what = "file") const;
  // Every entry whose name ends in `suffix`, whatever its type, sorted.
  Result<std::vector<std::string>> list(std::string_view suffix) const;

 private:
  std::string dir_;                 // as given
  std::vector<std::string> roots_;  // resolved folders a file may live in, each ending in '/'
};

// Error unless `name` can name a file inside a model folder: not empty, relative, no ".."
// component, no control character. `where` says who named it ("model.safetensors.index.json").
Status check_relative_name(std::string_view name, std::string_view where);

}  // namespace qlinear
