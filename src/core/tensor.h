// Owning tensors and N-d views. Every tensor and view knows where its memory lives (Location);
// 2-D ones convert to the matrix views the kernels take (qlinear/view.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "qlinear/dtype.h"
#include "qlinear/view.h"

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
  Location location;

  int64_t numel() const { return shape_numel(shape); }
  int64_t dim(std::size_t i) const { return shape.at(i); }
  int64_t stride(std::size_t i) const;  // contiguous strides when `strides` is empty
  bool is_contiguous() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
};

// Memory of one kind (host, pinned host, a device). Allocation fails with a Status, never a
// null buffer; the CUDA and OpenCL backends provide their own allocators (DeviceContext).
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Location location() const = 0;
  // `bytes` bytes aligned to at least 64, or an error naming the size and the memory.
  virtual Result<void*> allocate(std::size_t bytes) const = 0;
  virtual void deallocate(void* data) const noexcept = 0;
};

// Pageable host memory: allocate_streamed (64-byte aligned; huge pages from 4 MiB, see
// core/memory.h).
const Allocator& host_allocator();

// Returns a tensor's memory to the allocator it came from.
struct TensorDeleter {
  const Allocator* allocator = nullptr;
  void operator()(void* p) const {
    if (allocator != nullptr) allocator->deallocate(p);
  }
};

// An owning buffer with a dtype and a shape. Host tensors are zero-initialised.
class Tensor {
 public:
  Tensor() = default;
  // Errors: a size that overflows, or memory the allocator cannot give.
  static Result<Tensor> allocate(DType dtype, Shape shape,
                                 const Allocator& allocator = host_allocator());

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Location location() const { return location_; }
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
  TensorView view() const {
    return TensorView{const_cast<void*>(data()), dtype_, shape_, {}, location_};
  }
  // A 2-D tensor as a matrix (a 1-D one as one row).
  ConstMatrixView matrix() const;
  MatrixView matrix();

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  Location location_;
  std::unique_ptr<void, TensorDeleter> storage_;
};

}  // namespace qlinear
