// RawTensor: one checkpoint tensor as the converters see it (name for messages, dtype, shape,
// little-endian bytes). load_canonical builds them from TensorRefs; tests build them from
// in-memory vectors, so every conversion rule is testable without files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "qlinear/dtype.h"

namespace qlinear {

struct RawTensor {
  std::string where;  // "model.safetensors: \"model.layers.0.mlp.up_proj.qweight\""
  DType dtype = DType::kF32;
  Shape shape;
  std::span<const std::byte> bytes;  // numel * dtype_size bytes (checked by the readers)
};

// Error unless `tensor.dtype` is one of `allowed`; `role` says what the tensor is for
// ("GPTQ qweight").
Status check_dtype(const RawTensor& tensor, std::initializer_list<DType> allowed,
                   std::string_view role);
// Error unless the byte count matches shape and dtype.
Status check_byte_size(const RawTensor& tensor);

// I32 tensor -> its words, reinterpreted as unsigned (packed codes are unsigned).
Result<std::vector<uint32_t>> read_words(const RawTensor& tensor, std::string_view role);
// I32 tensor -> int32 values.
Result<std::vector<int32_t>> read_int32(const RawTensor& tensor, std::string_view role);
// I64 tensor -> int64 values.
Result<std::vector<int64_t>> read_int64(const RawTensor& tensor, std::string_view role);
// F32 / BF16 / F16 tensor -> float32 (lossless).
Result<std::vector<float>> read_floats(const RawTensor& tensor, std::string_view role);
// As read_floats, then every value must be finite and > 0: scales multiply codes, so a NaN,
// infinite, zero or negative scale is a corrupt checkpoint. The error names the index.
Result<std::vector<float>> read_scales(const RawTensor& tensor, std::string_view role);
// Optional "<prefix>.bias": any float dtype, shape [N], -> float32.
Result<std::vector<float>> read_bias(const RawTensor& tensor, int64_t n);

// "[2, 3]" for a flat index of a tensor of `shape`, for messages.
std::string index_to_string(const Shape& shape, int64_t flat);

}  // namespace qlinear
