// packing.h against the reference packers of test_tensors.h (independent implementations).
#include <gtest/gtest.h>

#include "convert/packing.h"
#include "test_tensors.h"

namespace qlinear {
namespace {

std::vector<uint8_t> as_bytes8(const std::vector<uint32_t>& v) {
  return std::vector<uint8_t>(v.begin(), v.end());
}

class Packing : public ::testing::TestWithParam<int> {};

TEST_P(Packing, RowsAndColumnsMatchTheReference) {
  const int bits = GetParam();
  const int64_t pf = 32 / bits;
  const int64_t rows = 2 * pf, cols = 3 * pf;
  const auto q = testing::random_codes(rows, cols, 0, (1u << bits) - 1, 5);
  const auto codes = as_bytes8(q);
  EXPECT_EQ(pack_rows(codes, rows, cols, bits),
            testing::as_words(testing::pack_along_rows(q, rows, cols, bits)));
  EXPECT_EQ(unpack_rows(testing::as_words(testing::pack_along_rows(q, rows, cols, bits)), rows / pf,
                        cols, bits),
            codes);
  EXPECT_EQ(pack_columns(codes, rows, cols, bits, PackOrder::kSequential),
            testing::as_words(
                testing::pack_along_cols(q, rows, cols, bits, testing::sequential_order(bits))));
  if (bits != 2) {
    const auto awq =
        testing::as_words(testing::pack_along_cols(q, rows, cols, bits, testing::awq_order(bits)));
    EXPECT_EQ(pack_columns(codes, rows, cols, bits, PackOrder::kAwq), awq);
    EXPECT_EQ(unpack_columns(awq, rows, cols / pf, bits, PackOrder::kAwq), codes);
  }
}

INSTANTIATE_TEST_SUITE_P(Bits, Packing, ::testing::Values(2, 4, 8));

TEST(PackingOrder, AwqTables) {
  const auto order = pack_order(PackOrder::kAwq, 4);
  const auto rev = pack_order_inverse(PackOrder::kAwq, 4);
  EXPECT_EQ(std::vector<int>(order.begin(), order.end()),
            (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(std::vector<int>(rev.begin(), rev.end()), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_FALSE(pack_order_supported(PackOrder::kAwq, 2));
  EXPECT_TRUE(pack_order_supported(PackOrder::kSequential, 2));
}

}  // namespace
}  // namespace qlinear
