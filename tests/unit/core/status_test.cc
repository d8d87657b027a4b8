#include <gtest/gtest.h>

#include <memory>

#include "core/status.h"
#include "core/tensor.h"

namespace qlinear {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::kInvalidArgument, "value {} must be > 0", v);
  return v;
}

Result<int> doubled(int v) {
  QL_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  QL_RETURN_IF_ERROR(parse_positive(a).status());
  QL_RETURN_IF_ERROR(parse_positive(b).status());
  return {};
}

TEST(Status, PropagatesErrorsThroughMacros) {
  auto good = doubled(4);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 8);
  auto bad = doubled(-3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "value -3 must be > 0");
  EXPECT_TRUE(check_both(1, 2).ok());
  EXPECT_EQ(check_both(1, 0).message(), "value 0 must be > 0");
}

TEST(Status, ContextPrefixesAndOkStaysOk) {
  Status s(ErrorCode::kCorrupt, "bad header");
  EXPECT_EQ(s.with_context("model.safetensors").message(), "model.safetensors: bad header");
  EXPECT_EQ(s.to_string(), "corrupt: bad header");
  EXPECT_TRUE(Status().with_context("x").ok());
}

TEST(Status, ResultFromOkStatusBecomesInternalError) {
  Result<int> r{Status()};
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

TEST(Status, ResultHoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace qlinear
