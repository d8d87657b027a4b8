// DeviceContext::upload on a GPU: every byte arrives where it was sent, whatever the size (up to
// 40 MiB, odd sizes), the offset and the source (pageable or page-locked). Without a GPU (CI)
// every test skips.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_gpu.h"
#include "kernels/device_context.h"

namespace qlinear {
namespace {

std::vector<uint8_t> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// Pageable sources of several sizes, odd ones included, each uploaded at an odd offset into a
// buffer whose other bytes must stay untouched.
TEST(CudaUpload, EveryByteArrivesWhereItWasSent) {
  REQUIRE_GPU();
  DeviceContext& dev = *test::gpu()->context;
  const std::size_t offset = 777;
  for (const std::size_t bytes :
       {std::size_t{1000}, (std::size_t{4} << 20) - 1, std::size_t{4} << 20,
        (std::size_t{16} << 20) + 3, (std::size_t{40} << 20) + 12345}) {
    SCOPED_TRACE(bytes);
    const std::size_t total = bytes + offset + 4096;
    auto buffer = Tensor::allocate(DType::kU8, {static_cast<int64_t>(total)}, dev.allocator());
    ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
    const std::vector<uint8_t> guard = random_bytes(total, 1);
    ASSERT_TRUE(dev.upload(buffer->data(), 0, guard.data(), total).ok());
    const std::vector<uint8_t> sent = random_bytes(bytes, static_cast<uint32_t>(bytes));
    const Status up = dev.upload(buffer->data(), offset, sent.data(), bytes);
    ASSERT_TRUE(up.ok()) << up.to_string();
    std::vector<uint8_t> back(total);
    ASSERT_TRUE(dev.download(back.data(), buffer->data(), 0, total).ok());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < total; ++i) {
      const bool inside = i >= offset && i < offset + bytes;
      wrong += back[i] != (inside ? sent[i - offset] : guard[i]) ? 1 : 0;
    }
    EXPECT_EQ(wrong, 0u);
  }
}

// A page-locked source (the decoder's staged ids and positions) arrives the same.
TEST(CudaUpload, PageLockedSourcesArriveTheSame) {
  REQUIRE_GPU();
  DeviceContext& dev = *test::gpu()->context;
  const std::size_t bytes = (std::size_t{20} << 20) + 5;
  auto pinned =
      Tensor::allocate(DType::kU8, {static_cast<int64_t>(bytes)}, dev.staging_allocator());
  ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
  const std::vector<uint8_t> sent = random_bytes(bytes, 9);
  std::copy(sent.begin(), sent.end(), pinned->data_as<uint8_t>());
  auto buffer = Tensor::allocate(DType::kU8, {static_cast<int64_t>(bytes)}, dev.allocator());
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(dev.upload(buffer->data(), 0, pinned->data(), bytes).ok());
  std::vector<uint8_t> back(bytes);
  ASSERT_TRUE(dev.download(back.data(), buffer->data(), 0, bytes).ok());
  EXPECT_TRUE(back == sent);
}

}  // namespace
}  // namespace qlinear
