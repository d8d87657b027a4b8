// The safetensors writer: header in insertion order, padded with spaces to a multiple of 8 bytes
// (as the reference writer does, so the data section stays 8-byte aligned), then the tensors
// back to back, through OutputFile (a temporary file renamed into place, so a failed write never
// leaves a half-written file under the final name).
#include <nlohmann/json.hpp>
#include <set>

#include "core/escape.h"
#include "io/safetensors.h"

namespace qlinear {

void SafetensorsWriter::add(std::string name, DType dtype, Shape shape,
                            std::span<const std::byte> bytes) {
  entries_.push_back(Entry{std::move(name), dtype, std::move(shape), {bytes.begin(), bytes.end()}});
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

Status SafetensorsWriter::write(const std::string& path, const OutputOptions& options) const {
  // The header text is appended entry by entry: an ordered_json object would search its keys
  // linearly on every insert (quadratic in the tensor count).
  std::string text = "{";
  if (!metadata_.empty()) {
    text += "\"__metadata__\":" + nlohmann::json(metadata_).dump(
                                      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    if (e.name == "__metadata__") {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: \"__metadata__\" is reserved and cannot name a tensor", path);
    }
    if (needs_escape(e.name)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: tensor name \"{}\" contains control characters or invalid UTF-8", path,
                        escape_for_terminal(e.name));
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
    const nlohmann::ordered_json entry = {{"dtype", dtype_safetensors_name(e.dtype)},
                                          {"shape", e.shape},
                                          {"data_offsets", {offset, offset + expected}}};
    if (text.size() > 1) text += ',';
    text += nlohmann::json(e.name).dump() + ":" + entry.dump();
    offset += expected;
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');

  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));

  QL_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path, options));
  QL_RETURN_IF_ERROR(out.write(std::as_bytes(std::span(length))));
  QL_RETURN_IF_ERROR(out.write(text));
  for (const Entry& e : entries_) QL_RETURN_IF_ERROR(out.write(e.bytes));
  return out.commit();
}

}  // namespace qlinear
