// Robustness: every truncation of a valid file and many single-byte corruptions of its length
// prefix and header must be rejected cleanly or accepted with a self-consistent layout; never a
// crash (the tests run under ASan + UBSan).
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "io_test_util.h"

namespace qlinear {
namespace {

using io_test::read_file;
using io_test::scratch_dir;
using io_test::write_file;

std::string valid_file(const std::filesystem::path& dir) {
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");
  writer.add_values<float>("model.w", DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  writer.add_values<uint16_t>("model.b", DType::kBF16, {3}, {1, 2, 3});
  writer.add_values<int64_t>("step", DType::kI64, {}, {7});
  writer.add_values<uint8_t>("empty", DType::kU8, {0, 4}, {});
  const auto path = dir / "valid.safetensors";
  EXPECT_TRUE(writer.write(path.string()).ok());
  return read_file(path);
}

// When open() accepts mutated bytes, what it exposes must still lie inside the file and tile
// the data section.
void check_consistent(const SafetensorsFile& file) {
  uint64_t covered = 0;
  for (const TensorInfo& t : file.tensors()) {
    EXPECT_EQ(t.begin, covered);
    covered = t.end;
    const auto span = file.data(t);
    if (!span.empty()) {
      volatile std::byte sink = span.back();  // touches the last byte: must be mapped
      (void)sink;
    }
  }
  EXPECT_LE(covered, file.file_size());
}

TEST(SafetensorsFuzz, EveryTruncationIsRejected) {
  const auto dir = scratch_dir();
  const std::string bytes = valid_file(dir);
  ASSERT_GT(bytes.size(), 8u);
  const auto path = (dir / "cut.safetensors").string();
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    write_file(path, bytes.substr(0, len));
    auto file = SafetensorsFile::open(path);
    // The last tensor has bytes, so every cut removes data some tensor owns.
    ASSERT_FALSE(file.ok()) << "accepted a file cut to " << len << " bytes";
    EXPECT_EQ(file.status().code(), ErrorCode::kCorrupt) << file.status().to_string();
    EXPECT_NE(file.status().message().find(path), std::string::npos);
  }
}

TEST(SafetensorsFuzz, ByteFlipsInPrefixAndHeaderNeverCrash) {
  const auto dir = scratch_dir();
  const std::string bytes = valid_file(dir);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  ASSERT_LE(8 + header_len, bytes.size());
  const auto path = (dir / "flip.safetensors").string();
  const unsigned char replacements[] = {0x00, 0x01, 0x20, 0x22, 0x2C, 0x2D, 0x30, 0x39,
                                        0x3A, 0x5B, 0x5D, 0x7B, 0x7D, 0x7F, 0x80, 0xFF};
  int accepted = 0;
  int rejected = 0;
  for (std::size_t pos = 0; pos < 8 + header_len; ++pos) {
    std::vector<unsigned char> values(std::begin(replacements), std::end(replacements));
    values.push_back(static_cast<unsigned char>(bytes[pos] ^ 0x01));
    values.push_back(static_cast<unsigned char>(bytes[pos] ^ 0x80));
    for (unsigned char v : values) {
      if (static_cast<unsigned char>(bytes[pos]) == v) continue;
      std::string mutated = bytes;
      mutated[pos] = static_cast<char>(v);
      write_file(path, mutated);
      auto file = SafetensorsFile::open(path);
      if (file.ok()) {
        ++accepted;
        check_consistent(**file);
      } else {
        ++rejected;
        EXPECT_NE(file.status().code(), ErrorCode::kOk);
        EXPECT_FALSE(file.status().message().empty());
      }
    }
  }
  // Most corruptions must be caught; a few (a space for a space-like byte, a digit in metadata)
  // legitimately still describe a valid file.
  EXPECT_GT(rejected, 10 * accepted) << accepted << " accepted, " << rejected << " rejected";
}

}  // namespace
}  // namespace qlinear
