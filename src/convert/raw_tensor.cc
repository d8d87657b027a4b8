#include "convert/raw_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace qlinear {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; qlinear reads it in place");

Status check_dtype(const RawTensor& tensor, std::initializer_list<DType> allowed,
                   std::string_view role) {
  std::vector<std::string_view> names;
  for (DType d : allowed) {
    if (d == tensor.dtype) return Status::ok_status();
    names.push_back(dtype_safetensors_name(d));
  }
  return make_error(ErrorCode::kCorrupt, "{} has dtype {}; {} must be {}", tensor.where,
                    dtype_safetensors_name(tensor.dtype), role, fmt::join(names, " or "));
}

Status check_byte_size(const RawTensor& tensor) {
  for (int64_t d : tensor.shape) {
    if (d < 0) {
      return make_error(ErrorCode::kCorrupt, "{} has shape {} with a negative extent", tensor.where,
                        shape_to_string(tensor.shape));
    }
  }
  const auto expected =
      static_cast<std::size_t>(shape_numel(tensor.shape)) * dtype_size(tensor.dtype);
  if (tensor.bytes.size() != expected) {
    return make_error(ErrorCode::kCorrupt, "{} holds {} bytes; shape {} of {} needs {}",
                      tensor.where, tensor.bytes.size(), shape_to_string(tensor.shape),
                      dtype_safetensors_name(tensor.dtype), expected);
  }
  return Status::ok_status();
}

namespace {

template <class T>
Result<std::vector<T>> read_plain(const RawTensor& tensor, DType dtype, std::string_view role) {
  QL_RETURN_IF_ERROR(check_dtype(tensor, {dtype}, role));
  QL_RETURN_IF_ERROR(check_byte_size(tensor));
  std::vector<T> out(tensor.bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), tensor.bytes.data(), tensor.bytes.size());
  return out;
}

}  // namespace

Result<std::vector<uint32_t>> read_words(const RawTensor& tensor, std::string_view role) {
  return read_plain<uint32_t>(tensor, DType::kI32, role);
}

Result<std::vector<int32_t>> read_int32(const RawTensor& tensor, std::string_view role) {
  return read_plain<int32_t>(tensor, DType::kI32, role);
}

Result<std::vector<int64_t>> read_int64(const RawTensor& tensor, std::string_view role) {
  return read_plain<int64_t>(tensor, DType::kI64, role);
}

Result<std::vector<float>> read_floats(const RawTensor& tensor, std::string_view role) {
  QL_RETURN_IF_ERROR(check_dtype(tensor, {DType::kF32, DType::kBF16, DType::kF16}, role));
  QL_RETURN_IF_ERROR(check_byte_size(tensor));
  std::vector<float> out(static_cast<std::size_t>(shape_numel(tensor.shape)));
  convert_to_f32(tensor.bytes.data(), tensor.dtype, out.size(), out.data());
  return out;
}

Result<std::vector<float>> read_scales(const RawTensor& tensor, std::string_view role) {
  QL_ASSIGN_OR_RETURN(std::vector<float> values, read_floats(tensor, role));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (!std::isfinite(v) || v <= 0.0f) {
      return make_error(ErrorCode::kCorrupt, "{} element {} is {}; every {} must be finite and > 0",
                        tensor.where, index_to_string(tensor.shape, static_cast<int64_t>(i)), v,
                        role);
    }
  }
  return values;
}

Result<std::vector<float>> read_bias(const RawTensor& tensor, int64_t n) {
  if (tensor.shape != Shape{n}) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; the bias must be [N={}]",
                      tensor.where, shape_to_string(tensor.shape), n);
  }
  return read_floats(tensor, "a bias");
}

std::string index_to_string(const Shape& shape, int64_t flat) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> index(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    const int64_t extent = shape[i] > 0 ? shape[i] : 1;
    index[i] = flat % extent;
    flat /= extent;
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

}  // namespace qlinear
