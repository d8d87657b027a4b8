#include "core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/memory.h"

namespace qlinear {
namespace {

class HostAllocator final : public Allocator {
 public:
  Location location() const override { return Location::host(); }
  Result<void*> allocate(std::size_t bytes) const override {
    void* p = allocate_streamed(bytes);
    if (p == nullptr) {
      return make_error(ErrorCode::kIo, "out of host memory: could not allocate {} bytes", bytes);
    }
    return p;
  }
  void deallocate(void* data) const noexcept override { std::free(data); }
};

}  // namespace

std::string Location::to_string() const {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kPinnedHost:
      return "pinned";
    case MemoryKind::kCuda:
      return fmt::format("cuda:{}", device);
    case MemoryKind::kOpenCl:
      return fmt::format("opencl:{}", device);
  }
  return "unknown";
}

std::string shape_to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorView::stride(std::size_t i) const {
  if (!strides.empty()) return strides.at(i);
  int64_t s = 1;
  for (std::size_t j = i + 1; j < shape.size(); ++j) s *= shape[j];
  return s;
}

bool TensorView::is_contiguous() const {
  if (strides.empty()) return true;
  int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

const Allocator& host_allocator() {
  // Never destroyed: a Tensor in another static object (a test's cache, a user's global) may be
  // freed after this function's statics are gone, whatever the order of first use.
  static const Allocator* const allocator = new HostAllocator();
  return *allocator;
}

Result<Tensor> Tensor::allocate(DType dtype, Shape shape, const Allocator& allocator) {
  // The byte count, refusing negative extents and overflow.
  uint64_t bytes = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d < 0) {
      return make_error(ErrorCode::kInvalidArgument, "tensor shape {} has a negative extent",
                        shape_to_string(shape));
    }
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return make_error(ErrorCode::kInvalidArgument, "tensor shape {} of {} overflows 64 bits",
                        shape_to_string(shape), dtype_name(dtype));
    }
    bytes *= static_cast<uint64_t>(d);
  }
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) {
    return make_error(ErrorCode::kInvalidArgument, "tensor shape {} of {} needs {} bytes",
                      shape_to_string(shape), dtype_name(dtype), bytes);
  }
  QL_ASSIGN_OR_RETURN(void* p, allocator.allocate(static_cast<std::size_t>(bytes)));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.location_ = allocator.location();
  t.storage_ = std::unique_ptr<void, TensorDeleter>(p, TensorDeleter{&allocator});
  if (t.location_.host_accessible() && bytes > 0) std::memset(p, 0, static_cast<size_t>(bytes));
  return t;
}

ConstMatrixView Tensor::matrix() const {
  const int64_t rows = shape_.size() >= 2 ? shape_[0] : 1;
  const int64_t cols = shape_.empty() ? 1 : shape_.back();
  return ConstMatrixView(data(), dtype_, rows, cols, cols, location_);
}

MatrixView Tensor::matrix() {
  const int64_t rows = shape_.size() >= 2 ? shape_[0] : 1;
  const int64_t cols = shape_.empty() ? 1 : shape_.back();
  return MatrixView(data(), dtype_, rows, cols, cols, location_);
}

}  // namespace qlinear
