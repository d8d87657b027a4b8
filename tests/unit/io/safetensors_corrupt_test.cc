// Every rule of the safetensors format, broken one at a time in hand-built files: open() must
// return kCorrupt with a message naming the file, the tensor and the offending value.
#include <gtest/gtest.h>

#include <initializer_list>

#include "io/safetensors.h"
#include "io_test_util.h"

namespace qlinear {
namespace {

using io_test::raw_safetensors;
using io_test::scratch_dir;
using io_test::u64_le;
using io_test::write_file;

// Writes `bytes`, opens them, and checks the error code and that every `needle` is in the
// message (the file path is always required).
void expect_corrupt(const std::string& bytes, std::initializer_list<std::string> needles,
                    ErrorCode code = ErrorCode::kCorrupt) {
  const auto path = (scratch_dir() / "bad.safetensors").string();
  write_file(path, bytes);
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok()) << "accepted: " << bytes.substr(8);
  EXPECT_EQ(file.status().code(), code) << file.status().to_string();
  const std::string& message = file.status().message();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  for (const auto& needle : needles) {
    EXPECT_NE(message.find(needle), std::string::npos) << "'" << needle << "' not in: " << message;
  }
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

TEST(SafetensorsCorrupt, ShorterThanLengthPrefix) {
  expect_corrupt(std::string("\x02\x00\x00\x00\x00", 5), {"5 bytes", "8-byte"});
  expect_corrupt("", {"0 bytes"});
}

TEST(SafetensorsCorrupt, HeaderLengthPastEndOfFile) {
  expect_corrupt(u64_le(1000) + "{}        ", {"header length 1000 past end of file (size 18)"});
}

TEST(SafetensorsCorrupt, HeaderLengthAboveLimit) {
  expect_corrupt(u64_le(100'000'001) + "{}", {"header length 100000001", "100000000"});
  expect_corrupt(u64_le(~uint64_t{0}) + "{}", {"18446744073709551615"});
}

TEST(SafetensorsCorrupt, BadJson) {
  // The parse fails at the 8th byte (the second comma), which the message must point to.
  expect_corrupt(raw_safetensors(R"({"a":1,,})", ""), {"invalid JSON", "byte 8"});
  expect_corrupt(raw_safetensors("{\"a\":", ""), {"invalid JSON"});
  expect_corrupt(raw_safetensors("{\"\xff\":1}", ""), {"invalid JSON"});  // not UTF-8
}

TEST(SafetensorsCorrupt, HeaderNotAnObject) {
  expect_corrupt(raw_safetensors("[1, 2]", ""), {"array", "object"});
  expect_corrupt(raw_safetensors("42      ", ""), {"number"});
}

TEST(SafetensorsCorrupt, UnknownDtype) {
  expect_corrupt(raw_safetensors("{" + entry("layer.w", "F7", "[1]", "[0,1]") + "}", "x"),
                 {"\"layer.w\"", "\"F7\""});
  // Case matters: the spec spells dtypes in capitals.
  expect_corrupt(raw_safetensors("{" + entry("t", "f32", "[1]", "[0,4]") + "}", "abcd"),
                 {"\"t\"", "\"f32\""});
}

TEST(SafetensorsCorrupt, NegativeOrNonIntegerShape) {
  expect_corrupt(raw_safetensors("{" + entry("neg", "U8", "[2,-1]", "[0,0]") + "}", ""),
                 {"\"neg\"", "-1", "[2,-1]"});
  expect_corrupt(raw_safetensors("{" + entry("frac", "U8", "[2.5]", "[0,2]") + "}", "ab"),
                 {"\"frac\"", "2.5"});
  expect_corrupt(raw_safetensors("{" + entry("str", "U8", "[\"2\"]", "[0,2]") + "}", "ab"),
                 {"\"str\"", "\"2\""});
  expect_corrupt(raw_safetensors(R"({"noshape":{"dtype":"U8","data_offsets":[0,0]}})", ""),
                 {"\"noshape\"", "shape"});
}

TEST(SafetensorsCorrupt, BadOffsets) {
  expect_corrupt(raw_safetensors("{" + entry("t", "U8", "[4]", "[8,4]") + "}", "12345678"),
                 {"\"t\"", "[8, 4]", "begin > end"});
  expect_corrupt(raw_safetensors("{" + entry("t", "U8", "[4]", "[0]") + "}", "1234"),
                 {"\"t\"", "[0]"});
  expect_corrupt(raw_safetensors("{" + entry("t", "U8", "[4]", "[0,-4]") + "}", "1234"),
                 {"\"t\"", "[0,-4]"});
  expect_corrupt(raw_safetensors(R"({"t":{"dtype":"U8","shape":[0]}})", ""),
                 {"\"t\"", "data_offsets", "missing"});
}

TEST(SafetensorsCorrupt, EntryNotAnObject) {
  expect_corrupt(raw_safetensors(R"({"t":[1,2]})", ""), {"\"t\"", "array"});
}

TEST(SafetensorsCorrupt, OverlappingOffsets) {
  // a = bytes [0, 8), b = bytes [4, 12): each is self-consistent, together they overlap.
  const std::string header =
      "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}";
  expect_corrupt(raw_safetensors(header, std::string(12, '\0')),
                 {"\"a\"", "\"b\"", "[4, 12]", "[0, 8]", "overlap"});
}

TEST(SafetensorsCorrupt, EmptyTensorInsideAnother) {
  const std::string header =
      "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("z", "F32", "[0]", "[4,4]") + "}";
  expect_corrupt(raw_safetensors(header, std::string(8, '\0')), {"\"a\"", "\"z\"", "overlap"});
}

TEST(SafetensorsCorrupt, GapBetweenTensors) {
  const std::string header =
      "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]") + "}";
  expect_corrupt(raw_safetensors(header, std::string(12, '\0')),
                 {"\"b\"", "[8, 12]", "gap", "[4, 8]"});
}

TEST(SafetensorsCorrupt, GapAtStart) {
  expect_corrupt(raw_safetensors("{" + entry("a", "U8", "[2]", "[2,4]") + "}", "1234"),
                 {"\"a\"", "[2, 4]", "gap", "[0, 2]"});
}

TEST(SafetensorsCorrupt, TrailingBytesNoTensorOwns) {
  expect_corrupt(raw_safetensors("{" + entry("a", "U8", "[2]", "[0,2]") + "}", "1234"),
                 {"cover 2 bytes", "4-byte data section", "[2, 4]"});
}

TEST(SafetensorsCorrupt, OffsetsPastEndOfData) {
  expect_corrupt(raw_safetensors("{" + entry("a", "F32", "[2]", "[0,8]") + "}", "1234"),
                 {"\"a\"", "[0, 8]", "4 bytes", "truncated"});
}

TEST(SafetensorsCorrupt, FileCutShort) {
  // A valid two-tensor file with its last 3 bytes missing.
  const std::string header =
      "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("last", "I16", "[3]", "[8,14]") + "}";
  const std::string full = raw_safetensors(header, std::string(14, '\x11'));
  expect_corrupt(full.substr(0, full.size() - 3), {"\"last\"", "[8, 14]", "11 bytes", "truncated"});
}

TEST(SafetensorsCorrupt, ByteSizeDisagreesWithShape) {
  expect_corrupt(raw_safetensors("{" + entry("w", "F32", "[3]", "[0,8]") + "}", "12345678"),
                 {"\"w\"", "[3]", "F32", "needs 12 bytes", "hold 8"});
  expect_corrupt(raw_safetensors("{" + entry("s", "I64", "[]", "[0,4]") + "}", "1234"),
                 {"\"s\"", "[]", "I64", "needs 8 bytes", "hold 4"});
}

TEST(SafetensorsCorrupt, ElementCountOverflows) {
  // 2^40 * 2^40 = 2^80 elements.
  expect_corrupt(raw_safetensors(
                     "{" + entry("huge", "U8", "[1099511627776,1099511627776]", "[0,0]") + "}", ""),
                 {"\"huge\"", "[1099511627776, 1099511627776]", "64 bits"});
  // 2^62 elements fit in int64, 2^62 * 8 bytes do not fit in 64 bits.
  expect_corrupt(
      raw_safetensors("{" + entry("wide", "F64", "[4611686018427387904]", "[0,0]") + "}", ""),
      {"\"wide\"", "[4611686018427387904]", "F64", "2^64"});
  // An extent above INT64_MAX.
  expect_corrupt(
      raw_safetensors("{" + entry("big", "U8", "[9223372036854775808]", "[0,0]") + "}", ""),
      {"\"big\"", "9223372036854775808"});
}

TEST(SafetensorsCorrupt, DuplicateTensorName) {
  const std::string header =
      "{" + entry("dup", "U8", "[1]", "[0,1]") + "," + entry("dup", "U8", "[1]", "[1,2]") + "}";
  expect_corrupt(raw_safetensors(header, "ab"), {"\"dup\"", "twice"});
}

TEST(SafetensorsCorrupt, DuplicateKeyInsideEntry) {
  const std::string header =
      R"({"model.layers.0.w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})";
  expect_corrupt(raw_safetensors(header, "a"), {"\"model.layers.0.w\"", "\"dtype\"", "twice"});
}

TEST(SafetensorsCorrupt, BadMetadata) {
  expect_corrupt(raw_safetensors(R"({"__metadata__":{"format":1}})", ""),
                 {"__metadata__", "\"format\"", "1"});
  expect_corrupt(raw_safetensors(R"({"__metadata__":["pt"]})", ""), {"__metadata__", "array"});
}

TEST(SafetensorsCorrupt, TensorNameWithControlCharactersIsRefusedAndEscaped) {
  // "\u0000" and "\u001b" are valid JSON escapes; the names they make must not reach a terminal.
  expect_corrupt(raw_safetensors("{" + entry("a\\u0000b", "U8", "[1]", "[0,1]") + "}", "x"),
                 {"a\\x00b", "control characters"});
  expect_corrupt(raw_safetensors("{" + entry("\\u001b[31mred", "U8", "[1]", "[0,1]") + "}", "x"),
                 {"\\x1b[31mred"});
  const auto path = (scratch_dir() / "esc.safetensors").string();
  write_file(path, raw_safetensors("{" + entry("\\u001b[2J", "U8", "[1]", "[0,1]") + "}", "x"));
  const auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message().find('\x1b'), std::string::npos) << "raw escape in message";
}

TEST(SafetensorsCorrupt, OverlongTensorNameIsRefused) {
  const std::string at_limit(4096, 'n');
  const std::string over(4097, 'n');
  const auto path = (scratch_dir() / "long.safetensors").string();
  write_file(path, raw_safetensors("{" + entry(at_limit, "U8", "[1]", "[0,1]") + "}", "x"));
  const auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->tensors().front().name, at_limit);
  expect_corrupt(raw_safetensors("{" + entry(over, "U8", "[1]", "[0,1]") + "}", "x"),
                 {"4097 bytes", "4096-byte limit", std::string(64, 'n') + "..."});
}

TEST(SafetensorsCorrupt, NotARegularFile) {
  const auto dir = scratch_dir();
  auto file = SafetensorsFile::open(dir.string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kRefusedFile);
  EXPECT_NE(file.status().message().find("is a directory"), std::string::npos);
}

}  // namespace
}  // namespace qlinear
