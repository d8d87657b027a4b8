// Where memory lives, and non-owning matrix views over it.
//
// A view is a row-major matrix with a leading dimension (elements from one row to the next), so
// a slice of a fused QKV output or of a KV cache is a view, never a copy. Const and mutable views
// are different types: a kernel's input is a ConstMatrixView, its output a MatrixView, and a
// MatrixView converts to a ConstMatrixView but not back.
//
// Host, pinned-host and CUDA memory are addressed by pointers: data() is the address of element
// (0, 0) and slicing moves it. OpenCL memory is addressed by a cl_mem handle, which cannot be
// offset: data() is the handle and offset() counts the elements from the buffer's start to
// element (0, 0); slicing moves offset(). offset() is 0 for every other kind of memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "qlinear/dtype.h"

namespace qlinear {

enum class MemoryKind : uint8_t {
  kHost,        // pageable host memory
  kPinnedHost,  // page-locked host memory (CUDA staging); host code may read and write it
  kCuda,        // device memory of cuda:i
  kOpenCl,      // a buffer of opencl:i
};

struct Location {
  MemoryKind kind = MemoryKind::kHost;
  int device = 0;  // the i of cuda:i / opencl:i; 0 for host memory

  static constexpr Location host() { return {}; }
  static constexpr Location pinned() { return {MemoryKind::kPinnedHost, 0}; }
  static constexpr Location cuda(int index) { return {MemoryKind::kCuda, index}; }
  static constexpr Location opencl(int index) { return {MemoryKind::kOpenCl, index}; }

  // Host code may dereference it.
  constexpr bool host_accessible() const {
    return kind == MemoryKind::kHost || kind == MemoryKind::kPinnedHost;
  }
  friend constexpr bool operator==(const Location&, const Location&) = default;
  // "host", "pinned", "cuda:0", "opencl:1"
  std::string to_string() const;
};

// Caller-owned scratch memory for one run (PreparedLinear::workspace_bytes tells how much).
struct Workspace {
  void* data = nullptr;  // an address, or a cl_mem handle for OpenCL memory
  std::size_t bytes = 0;
  Location location;
};

template <class Void>
class BasicMatrixView {
  static_assert(std::is_same_v<std::remove_const_t<Void>, void>);
  using Byte = std::conditional_t<std::is_const_v<Void>, const std::byte, std::byte>;

 public:
  BasicMatrixView() = default;
  // `ld` >= cols (elements between the starts of consecutive rows).
  BasicMatrixView(Void* data, DType dtype, int64_t rows, int64_t cols, int64_t ld,
                  Location location = {}, int64_t offset = 0)
      : data_(data),
        offset_(offset),
        dtype_(dtype),
        rows_(rows),
        cols_(cols),
        ld_(ld),
        location_(location) {}
  // A mutable view is also a const one.
  template <class Other, class = std::enable_if_t<std::is_const_v<Void> && !std::is_const_v<Other>>>
  BasicMatrixView(const BasicMatrixView<Other>& other)  // NOLINT(google-explicit-constructor)
      : BasicMatrixView(other.data(), other.dtype(), other.rows(), other.cols(), other.ld(),
                        other.location(), other.offset()) {}

  // A contiguous [rows, cols] matrix (ld = cols).
  static BasicMatrixView dense(Void* data, DType dtype, int64_t rows, int64_t cols,
                               Location location = {}) {
    return BasicMatrixView(data, dtype, rows, cols, cols, location);
  }

  Void* data() const { return data_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t ld() const { return ld_; }
  Location location() const { return location_; }
  bool empty() const { return rows_ == 0 || cols_ == 0; }
  // Rows follow each other without gaps.
  bool contiguous() const { return rows_ <= 1 || ld_ == cols_; }
  std::size_t element_bytes() const { return dtype_size(dtype_); }

  // The address of row r (host, pinned and CUDA memory; not OpenCL handles).
  Void* row(int64_t r) const { return static_cast<Byte*>(data_) + byte_delta(r * ld_); }
  template <class T>
  std::conditional_t<std::is_const_v<Void>, const T, T>* row_as(int64_t r) const {
    return static_cast<std::conditional_t<std::is_const_v<Void>, const T, T>*>(row(r));
  }

  // Rows [first, first + count); the caller keeps them inside the view.
  BasicMatrixView slice_rows(int64_t first, int64_t count) const {
    return moved(first * ld_, count, cols_);
  }
  // Columns [first, first + count) of every row; ld stays.
  BasicMatrixView slice_cols(int64_t first, int64_t count) const {
    return moved(first, rows_, count);
  }

 private:
  std::ptrdiff_t byte_delta(int64_t elements) const {
    return static_cast<std::ptrdiff_t>(elements * static_cast<int64_t>(element_bytes()));
  }
  BasicMatrixView moved(int64_t elements, int64_t rows, int64_t cols) const {
    BasicMatrixView v = *this;
    v.rows_ = rows;
    v.cols_ = cols;
    if (location_.kind == MemoryKind::kOpenCl) {
      v.offset_ += elements;
    } else if (data_ != nullptr) {
      v.data_ = static_cast<Byte*>(data_) + byte_delta(elements);
    }
    return v;
  }

  Void* data_ = nullptr;
  int64_t offset_ = 0;
  DType dtype_ = DType::kF32;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t ld_ = 0;
  Location location_;
};

using ConstMatrixView = BasicMatrixView<const void>;
using MatrixView = BasicMatrixView<void>;

}  // namespace qlinear
