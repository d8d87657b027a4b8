// The safetensors writer: header in insertion order, padded with spaces to a multiple of 8 bytes
// (as the reference writer does, so the data section stays 8-byte aligned), then the tensors
// back to back. Written to a temporary file and renamed, so a failed write never leaves a
// half-written file under the final name.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors.h"

namespace qlinear {
namespace {

// Closes (and on failure removes) the temporary file on every path out of write().
struct TempFile {
  std::string path;
  std::FILE* stream = nullptr;
  bool keep = false;
  ~TempFile() {
    if (stream != nullptr) std::fclose(stream);
    if (!keep) std::remove(path.c_str());
  }
};

}  // namespace

void SafetensorsWriter::add(std::string name, DType dtype, Shape shape,
                            std::span<const std::byte> bytes) {
  entries_.push_back(Entry{std::move(name), dtype, std::move(shape), {bytes.begin(), bytes.end()}});
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

Status SafetensorsWriter::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    if (e.name == "__metadata__") {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"__metadata__\" is reserved and cannot name a tensor", path);
    }
    if (!names.insert(e.name).second) {
      return make_error(ErrorCode::kInvalidArgument, "{}: tensor \"{}\" added twice", path, e.name);
    }
    int64_t numel = 1;
    bool overflow = false;
    for (int64_t d : e.shape) {
      if (d < 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: \"{}\" has shape {} with a negative "
                          "extent",
                          path, e.name, shape_to_string(e.shape));
      }
      overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    }
    uint64_t expected = 0;
    overflow = overflow ||
               __builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(e.dtype), &expected);
    if (overflow || expected != e.bytes.size()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"{}\" has shape {} of {} ({} bytes) but {} bytes were given", path,
                        e.name, shape_to_string(e.shape), dtype_safetensors_name(e.dtype),
                        overflow ? std::string("more than 2^64") : std::to_string(expected),
                        e.bytes.size());
    }
    header[e.name] = {{"dtype", dtype_safetensors_name(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));

  TempFile tmp;
  tmp.path = path + ".tmp." + std::to_string(::getpid());
  tmp.stream = std::fopen(tmp.path.c_str(), "wb");
  if (tmp.stream == nullptr) {
    return make_error(ErrorCode::kIo, "{}: cannot create: {}", tmp.path, std::strerror(errno));
  }
  bool good = std::fwrite(length, 1, 8, tmp.stream) == 8 &&
              std::fwrite(text.data(), 1, text.size(), tmp.stream) == text.size();
  for (const Entry& e : entries_) {
    if (!good) break;
    good = e.bytes.empty() ||
           std::fwrite(e.bytes.data(), 1, e.bytes.size(), tmp.stream) == e.bytes.size();
  }
  const int close_result = std::fclose(tmp.stream);
  tmp.stream = nullptr;
  if (!good || close_result != 0) {
    return make_error(ErrorCode::kIo, "{}: write failed: {}", tmp.path, std::strerror(errno));
  }
  if (std::rename(tmp.path.c_str(), path.c_str()) != 0) {
    return make_error(ErrorCode::kIo, "{}: cannot rename {} into place: {}", path, tmp.path,
                      std::strerror(errno));
  }
  tmp.keep = true;
  return Status::ok_status();
}

}  // namespace qlinear
