// Tensor views (non-owning, strided, in elements) and an owning, 64-byte aligned buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace qlinear {

using Shape = std::vector<int64_t>;

// "[4096, 512]"
std::string shape_to_string(const Shape& shape);
// Product of the extents; 1 for a 0-d shape.
int64_t shape_numel(const Shape& shape);

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Shape shape;
  Shape strides;  // in elements; empty means contiguous row-major

  int64_t numel() const { return shape_numel(shape); }
  int64_t dim(std::size_t i) const { return shape.at(i); }
  int64_t stride(std::size_t i) const;  // contiguous strides when `strides` is empty
  bool is_contiguous() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
};

// Owning, 64-byte aligned, zero-initialised storage with a dtype and a shape.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  template <class T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }
  TensorView view() const { return TensorView{const_cast<void*>(data()), dtype_, shape_, {}}; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::unique_ptr<void, FreeDeleter> storage_;
};

}  // namespace qlinear
