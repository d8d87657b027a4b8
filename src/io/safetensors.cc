// The safetensors reader: every rule of the format is checked before a byte of tensor data is
// exposed. Rules follow the reference implementation (huggingface/safetensors, Metadata::validate):
// header length <= 100 MB, a JSON object header with unique keys, known dtypes, byte sizes equal
// to product(shape) * dtype size, and data_offsets that tile the data section exactly (sorted,
// starting at 0, no overlap, no hole, ending at the end of the file) so no byte is unaccounted.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/escape.h"
#include "io/json_text.h"

namespace qlinear {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Longer than any real tensor name (~100 bytes); std::regex recurses once per character, so a
// megabyte name would overflow the stack in the regexes that split layer names.
constexpr std::size_t kMaxTensorNameBytes = 4096;

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// JSON numbers as unsigned integers; floats, negatives and non-numbers are rejected.
bool as_u64(const json& value, uint64_t* out) {
  if (!value.is_number_unsigned()) return false;
  *out = value.get<uint64_t>();
  return true;
}

// Parses one header entry (everything but the offsets' place in the data section).
Status parse_entry(const std::string& name, const json& entry, TensorInfo* info) {
  if (name.size() > kMaxTensorNameBytes) {
    return make_error(ErrorCode::kCorrupt,
                      "tensor name \"{}...\" is {} bytes, over the {}-byte limit (real names are "
                      "a few dozen; the name regexes of explain and the runner must stay cheap)",
                      escape_for_terminal(name.substr(0, 64)), name.size(), kMaxTensorNameBytes);
  }
  if (needs_escape(name)) {
    return make_error(ErrorCode::kCorrupt,
                      "tensor name \"{}\" contains control characters or invalid UTF-8 (names are "
                      "printed; a NUL or an escape sequence in one is refused)",
                      escape_for_terminal(name));
  }
  info->name = name;
  if (!entry.is_object()) {
    return make_error(ErrorCode::kCorrupt, "\"{}\": header entry is {}, expected an object", name,
                      entry.type_name());
  }
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return make_error(ErrorCode::kCorrupt, "\"{}\": \"dtype\" missing or not a string", name);
  }
  const auto& dtype_name = dtype_it->get_ref<const std::string&>();
  const auto dtype = dtype_from_safetensors(dtype_name);
  if (!dtype) {
    return make_error(ErrorCode::kCorrupt,
                      "\"{}\": unknown dtype \"{}\" (known: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 "
                      "I32 I16 I8 U8 BOOL)",
                      name, dtype_name);
  }
  info->dtype = *dtype;

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return make_error(ErrorCode::kCorrupt, "\"{}\": \"shape\" missing or not an array", name);
  }
  info->shape.clear();
  for (const json& extent : *shape_it) {
    uint64_t d = 0;
    if (!as_u64(extent, &d) || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return make_error(ErrorCode::kCorrupt,
                        "\"{}\": shape {} has extent {}; extents must be non-negative integers",
                        name, shape_it->dump(), extent.dump());
    }
    info->shape.push_back(static_cast<int64_t>(d));
  }

  const auto offsets_it = entry.find("data_offsets");
  uint64_t begin = 0;
  uint64_t end = 0;
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !as_u64((*offsets_it)[0], &begin) || !as_u64((*offsets_it)[1], &end)) {
    return make_error(ErrorCode::kCorrupt,
                      "\"{}\": data_offsets {} must be [begin, end] of non-negative integers", name,
                      offsets_it == entry.end() ? std::string("(missing)") : offsets_it->dump());
  }
  if (begin > end) {
    return make_error(ErrorCode::kCorrupt, "\"{}\": data_offsets [{}, {}] have begin > end", name,
                      begin, end);
  }
  info->begin = begin;
  info->end = end;

  // product(shape) * size, left to right like shape_numel(), so later users cannot overflow.
  int64_t numel = 1;
  for (int64_t d : info->shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return make_error(ErrorCode::kCorrupt,
                        "\"{}\": shape {} has more elements than fit in 64 bits", name,
                        shape_to_string(info->shape));
    }
  }
  uint64_t expected = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(info->dtype), &expected)) {
    return make_error(ErrorCode::kCorrupt, "\"{}\": shape {} of {} needs more than 2^64 bytes",
                      name, shape_to_string(info->shape), dtype_name);
  }
  if (expected != end - begin) {
    return make_error(ErrorCode::kCorrupt,
                      "\"{}\": shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
                      name, shape_to_string(info->shape), dtype_name, expected, begin, end,
                      end - begin);
  }
  return Status::ok_status();
}

}  // namespace

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  QL_ASSIGN_OR_RETURN(const ReadFile file, open_user_file(path, kNoSizeLimit, ""));
  return open(file);
}

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::open(const ReadFile& handle) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  const std::string& path = handle.path();
  file->path_ = path;
  const uint64_t size = handle.size();
  if (size < 8) {
    return make_error(ErrorCode::kCorrupt,
                      "{}: file is {} bytes, shorter than the 8-byte header length", path, size);
  }
  if (size > std::numeric_limits<std::size_t>::max()) {
    return make_error(ErrorCode::kRefusedFile, "{}: {} bytes cannot be mapped", path, size);
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, handle.fd(), 0);
  if (mapping == MAP_FAILED) {
    return make_error(ErrorCode::kIo, "{}: mmap of {} bytes failed: {}", path, size,
                      std::strerror(errno));
  }
  file->mapping_ = mapping;
  file->file_size_ = size;
  const auto* bytes = static_cast<const unsigned char*>(mapping);

  const uint64_t header_len = read_u64_le(bytes);
  if (header_len > kMaxHeaderBytes) {
    return make_error(ErrorCode::kCorrupt, "{}: header length {} exceeds the limit of {} bytes",
                      path, header_len, kMaxHeaderBytes);
  }
  if (8 + header_len > size) {
    return make_error(ErrorCode::kCorrupt, "{}: header length {} past end of file (size {})", path,
                      header_len, size);
  }
  file->data_start_ = 8 + header_len;
  const uint64_t data_size = size - file->data_start_;

  const std::string_view header_text(reinterpret_cast<const char*>(bytes + 8), header_len);
  std::vector<std::string> duplicate;
  auto header = io_internal::parse_json_text(header_text, path + ": header",
                                             io_internal::DuplicateKeys::kReject, &duplicate);
  if (!header.ok()) {
    if (!duplicate.empty()) {
      if (duplicate.size() == 1) {
        return make_error(ErrorCode::kCorrupt, "{}: tensor \"{}\" appears twice in the header",
                          path, escape_for_terminal(duplicate[0]));
      }
      return make_error(ErrorCode::kCorrupt, "{}: \"{}\": key \"{}\" appears twice", path,
                        escape_for_terminal(duplicate.front()),
                        escape_for_terminal(duplicate.back()));
    }
    return header.status();
  }
  if (!header->is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: header is a JSON {}, expected an object", path,
                      header->type_name());
  }

  for (const auto& [key, value] : header->items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        return make_error(ErrorCode::kCorrupt,
                          "{}: \"__metadata__\" is a JSON {}, expected an "
                          "object of strings",
                          path, value.type_name());
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          return make_error(
              ErrorCode::kCorrupt, "{}: \"__metadata__\" key \"{}\" is {}, expected a string", path,
              escape_for_terminal(mkey), escape_for_terminal(mvalue.dump().substr(0, 80)));
        }
        file->metadata_[mkey] = mvalue.get<std::string>();
      }
      continue;
    }
    TensorInfo info;
    QL_RETURN_IF_ERROR(parse_entry(key, value, &info).with_context(path));
    if (info.end > data_size) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: \"{}\": data_offsets [{}, {}] past the end of the data section ({} "
                        "bytes); truncated data or a bad offset",
                        path, key, info.begin, info.end, data_size);
    }
    file->tensors_.push_back(std::move(info));
  }

  auto& tensors = file->tensors_;
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  uint64_t covered = 0;  // the data section is tiled in order: [0, covered) is accounted for
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    if (t.begin < covered) {
      return make_error(
          ErrorCode::kCorrupt, "{}: \"{}\" data_offsets [{}, {}] overlap \"{}\" [{}, {}]", path,
          t.name, t.begin, t.end, tensors[i - 1].name, tensors[i - 1].begin, tensors[i - 1].end);
    }
    if (t.begin > covered) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: \"{}\" data_offsets [{}, {}] leave a gap: bytes [{}, {}] belong to no "
                        "tensor (the data section must be covered contiguously)",
                        path, t.name, t.begin, t.end, covered, t.begin);
    }
    covered = t.end;
  }
  if (covered != data_size) {
    return make_error(ErrorCode::kCorrupt,
                      "{}: tensors cover {} bytes of the {}-byte data section; bytes [{}, {}] "
                      "belong to no tensor",
                      path, covered, data_size, covered, data_size);
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) file->index_[tensors[i].name] = i;
  return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, file_size_);
}

void SafetensorsFile::release_pages() const {
  // Advice only: a failure (a kernel without it) leaves the pages resident, nothing else.
  if (mapping_ != nullptr) (void)::madvise(mapping_, file_size_, MADV_DONTNEED);
}

std::string SafetensorsFile::file_name() const {
  const auto slash = path_.find_last_of('/');
  return slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& info) const {
  const auto* base = static_cast<const std::byte*>(mapping_) + data_start_;
  return {base + info.begin, static_cast<std::size_t>(info.nbytes())};
}

}  // namespace qlinear
