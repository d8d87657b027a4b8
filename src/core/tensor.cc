#include "core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>

#include "core/memory.h"

namespace qlinear {

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

void Tensor::FreeDeleter::operator()(void* p) const { std::free(p); }

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const std::size_t bytes = nbytes();
  void* p = allocate_streamed(bytes);
  if (p != nullptr) std::memset(p, 0, bytes);
  storage_.reset(p);
}

}  // namespace qlinear
