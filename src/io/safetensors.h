// safetensors files: a validating, memory-mapping reader and a writer.
//
// The reader trusts nothing before it is checked (docs/reference/formats.md, safetensors spec):
// the 8-byte little-endian header length is bounded (<= 100 MB) and inside the file; the header
// is well-formed JSON whose every entry has a known dtype, a shape of non-negative extents and
// data_offsets [begin, end] with begin <= end, inside the data section, in order, non-overlapping,
// and end - begin == product(shape) * dtype size (all computed without integer overflow).
// Tensor names must be free of control characters and valid UTF-8 (they reach terminals).
// Like the reference implementation, the tensors must tile the data section exactly: no gap and
// no trailing byte that belongs to no tensor (the spec forbids holes; they enable polyglot files).
// Every error names the file and, where there is one, the tensor and the rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/model_files.h"
#include "io/output_file.h"
#include "qlinear/dtype.h"

namespace qlinear {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets relative to the start of the data section
  uint64_t end = 0;
  uint64_t nbytes() const { return end - begin; }
};

class SafetensorsFile {
 public:
  // Maps and validates `path`, a file the user named (links followed; it must be a regular
  // file). The file stays mapped for the object's lifetime.
  static Result<std::shared_ptr<const SafetensorsFile>> open(const std::string& path);
  // Maps and validates an already opened file (ModelDir::open_file); messages name file.path().
  static Result<std::shared_ptr<const SafetensorsFile>> open(const ReadFile& file);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // The file name without directories, for messages.
  std::string file_name() const;
  // Tensors in order of their data offsets.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;
  std::span<const std::byte> data(const TensorInfo& info) const;
  // The "__metadata__" string map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t file_size() const { return file_size_; }
  // Drops this process's resident pages of the mapping (madvise MADV_DONTNEED); the page cache
  // keeps them, and the next read of a tensor faults its pages back in from the file. The mapping
  // is read-only and never written, so every view of it stays valid and reads the same bytes:
  // only the resident set shrinks. The loader calls it after each converted layer, so a model's
  // file pages do not stay resident beside its prepared weights.
  void release_pages() const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* mapping_ = nullptr;
  uint64_t file_size_ = 0;
  uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

class SafetensorsWriter {
 public:
  // Copies `bytes`; their size must be product(shape) * dtype size (checked by write()).
  void add(std::string name, DType dtype, Shape shape, std::span<const std::byte> bytes);
  template <class T>
  void add_values(std::string name, DType dtype, Shape shape, const std::vector<T>& values) {
    add(std::move(name), dtype, std::move(shape), std::as_bytes(std::span<const T>(values)));
  }
  void set_metadata(std::string key, std::string value);
  // Writes the file (header padded with spaces to a multiple of 8 bytes, tensors in insertion
  // order) through OutputFile (io/output_file.h): a temporary file beside `path` renamed over
  // it; links, devices and directories refused unless `options` say otherwise. Errors name the
  // path or the tensor.
  Status write(const std::string& path, const OutputOptions& options = {}) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace qlinear
