// Tensors and views: allocation as a Result (never a null buffer), where memory lives, and
// matrix views whose slices are views (leading dimension kept; OpenCL handles offset, pointers
// move), const and mutable as different types.
#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "qlinear/view.h"

namespace qlinear {
namespace {

static_assert(std::is_convertible_v<MatrixView, ConstMatrixView>);
static_assert(!std::is_convertible_v<ConstMatrixView, MatrixView>);
static_assert(!std::is_constructible_v<MatrixView, ConstMatrixView>);

TEST(Tensor, ShapesStridesAndAlignment) {
  Result<Tensor> t = Tensor::allocate(DType::kF32, {3, 5});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->numel(), 15);
  EXPECT_EQ(t->nbytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % 64, 0u);
  EXPECT_EQ(t->data_as<float>()[14], 0.0f);  // zero-initialised
  EXPECT_EQ(t->location(), Location::host());
  TensorView v = t->view();
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.stride(0), 5);
  EXPECT_EQ(v.stride(1), 1);
  EXPECT_EQ(v.location, Location::host());
  TensorView transposed{t->data(), DType::kF32, {5, 3}, {1, 5}, Location::host()};
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(shape_to_string({4096, 512}), "[4096, 512]");
  EXPECT_EQ(shape_numel({}), 1);
}

TEST(Tensor, AllocationFailuresAreErrorsNotNullBuffers) {
  const Result<Tensor> negative = Tensor::allocate(DType::kF32, {2, -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("negative"), std::string::npos);
  const Result<Tensor> overflow =
      Tensor::allocate(DType::kF32, {int64_t{1} << 40, int64_t{1} << 40});
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflows"), std::string::npos)
      << overflow.status().message();
  // 2^63 bytes fits 64 bits but no address space: refused before malloc
  // (which ASan would turn into an abort).
  const Result<Tensor> huge = Tensor::allocate(DType::kU8, {int64_t{1} << 62, 2});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), ErrorCode::kInvalidArgument) << huge.status().message();
}

TEST(Location, NamesAndHostAccess) {
  EXPECT_EQ(Location::host().to_string(), "host");
  EXPECT_EQ(Location::pinned().to_string(), "pinned");
  EXPECT_EQ(Location::cuda(3).to_string(), "cuda:3");
  EXPECT_EQ(Location::opencl(1).to_string(), "opencl:1");
  EXPECT_TRUE(Location::pinned().host_accessible());
  EXPECT_FALSE(Location::cuda(0).host_accessible());
  EXPECT_NE(Location::cuda(0), Location::cuda(1));
}

TEST(MatrixView, SlicesAreViewsWithTheLeadingDimensionKept) {
  float data[4 * 10] = {};
  for (int i = 0; i < 40; ++i) data[i] = static_cast<float>(i);
  const MatrixView m(data, DType::kF32, 4, 8, 10);  // 4 rows of 8 inside rows of 10
  EXPECT_FALSE(m.contiguous());
  const MatrixView rows = m.slice_rows(1, 2);
  EXPECT_EQ(rows.rows(), 2);
  EXPECT_EQ(rows.ld(), 10);
  EXPECT_EQ(rows.row_as<float>(0)[0], 10.0f);
  const MatrixView cols = m.slice_cols(3, 4);  // a shard of a fused output
  EXPECT_EQ(cols.cols(), 4);
  EXPECT_EQ(cols.row_as<float>(2)[1], 24.0f);
  const ConstMatrixView c = cols;
  EXPECT_EQ(c.row_as<float>(3)[3], 36.0f);
  EXPECT_EQ(c.offset(), 0);
  // OpenCL memory is a handle: slicing moves the element offset, not the handle.
  int dummy = 0;
  const MatrixView cl(&dummy, DType::kBF16, 4, 8, 10, Location::opencl(0));
  const MatrixView shard = cl.slice_rows(2, 1).slice_cols(5, 3);
  EXPECT_EQ(shard.data(), static_cast<void*>(&dummy));
  EXPECT_EQ(shard.offset(), 25);
  EXPECT_EQ(MatrixView::dense(data, DType::kF32, 5, 8).ld(), 8);
}

}  // namespace
}  // namespace qlinear
