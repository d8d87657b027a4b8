// Reader/writer round trips and an independent check of the byte layout against a file built by
// hand from the safetensors specification.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "io_test_util.h"

namespace qlinear {
namespace {

using io_test::raw_safetensors;
using io_test::read_file;
using io_test::scratch_dir;
using io_test::write_file;

std::string as_string(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Distinct, position-dependent bytes so a misplaced tensor cannot compare equal.
std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>((i * 31 + seed * 7 + 1) & 0xFF);
  return out;
}

struct Case {
  std::string name;
  DType dtype;
  Shape shape;
  std::size_t element_size;  // from the safetensors spec, not from dtype_size()
};

TEST(SafetensorsRoundTrip, EveryDtypeAndShapeKind) {
  const std::vector<Case> cases = {
      {"f32.matrix", DType::kF32, {2, 3}, 4},
      {"f16.vector", DType::kF16, {5}, 2},
      {"bf16.cube", DType::kBF16, {2, 2, 2}, 2},
      {"f8e4m3", DType::kF8E4M3, {3, 4}, 1},
      {"f8e5m2", DType::kF8E5M2, {7}, 1},
      {"i64.scalar", DType::kI64, {}, 8},
      {"i32", DType::kI32, {4, 1}, 4},
      {"i16", DType::kI16, {3}, 2},
      {"i8", DType::kI8, {9}, 1},
      {"u8.empty", DType::kU8, {0}, 1},
      {"bool", DType::kBool, {2, 2}, 1},
      {"f64.empty", DType::kF64, {4, 0, 2}, 8},
      {"f32.scalar", DType::kF32, {}, 4},
  };
  SafetensorsWriter writer;
  std::vector<std::vector<std::byte>> payloads;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::size_t numel = 1;
    for (int64_t d : cases[i].shape) numel *= static_cast<std::size_t>(d);
    payloads.push_back(pattern(numel * cases[i].element_size, static_cast<unsigned>(i)));
    writer.add(cases[i].name, cases[i].dtype, cases[i].shape, payloads.back());
  }
  writer.set_metadata("format", "pt");
  writer.set_metadata("note", "round trip");
  const auto path = (scratch_dir() / "rt.safetensors").string();
  ASSERT_TRUE(writer.write(path).ok());

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->tensors().size(), cases.size());
  EXPECT_EQ((*file)->file_name(), "rt.safetensors");
  EXPECT_EQ((*file)->file_size(), std::filesystem::file_size(path));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const TensorInfo* info = (*file)->find(cases[i].name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->name, cases[i].name);
    EXPECT_EQ(info->dtype, cases[i].dtype);
    EXPECT_EQ(info->shape, cases[i].shape);
    EXPECT_EQ(info->nbytes(), payloads[i].size());
    const auto bytes = (*file)->data(*info);
    ASSERT_EQ(bytes.size(), payloads[i].size());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), payloads[i].begin()));
  }
  EXPECT_EQ((*file)->find("missing"), nullptr);
  const std::map<std::string, std::string> expected_meta = {{"format", "pt"},
                                                            {"note", "round trip"}};
  EXPECT_EQ((*file)->metadata(), expected_meta);

  // tensors() is in offset order, and the offsets tile the data section.
  uint64_t at = 0;
  for (const TensorInfo& t : (*file)->tensors()) {
    EXPECT_EQ(t.begin, at) << t.name;
    at = t.end;
  }
}

// The file-backed memory this process has resident (RssFile of /proc/self/status), in KiB.
long resident_file_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  }
  return -1;
}

// release_pages (what the loader calls after each layer) drops the mapped pages a read brought
// in, and a read after it sees the same bytes (faulted back in from the file).
TEST(SafetensorsRoundTrip, ReleasedPagesLeaveTheResidentSetAndReadTheSameBytes) {
  const std::vector<std::byte> payload = pattern(std::size_t{16} << 20, 3);
  SafetensorsWriter writer;
  writer.add("big", DType::kU8, {static_cast<int64_t>(payload.size())}, payload);
  const auto path = (scratch_dir() / "release.safetensors").string();
  ASSERT_TRUE(writer.write(path).ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const TensorInfo* info = (*file)->find("big");
  ASSERT_NE(info, nullptr);
  const auto bytes = (*file)->data(*info);
  const long before = resident_file_kib();
  if (before < 0) GTEST_SKIP() << "no RssFile in /proc/self/status";
  ASSERT_TRUE(std::equal(bytes.begin(), bytes.end(), payload.begin()));
  const long touched = resident_file_kib();
  EXPECT_GE(touched - before, 12 * 1024) << "reading 16 MiB of the mapping";
  (*file)->release_pages();
  const long released = resident_file_kib();
  EXPECT_GE(touched - released, 12 * 1024) << "release_pages left the pages resident";
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), payload.begin()));
}

// The writer's header, parsed independently: offsets follow insertion order, the header is
// padded with spaces to a multiple of 8, and the data section follows it.
TEST(SafetensorsRoundTrip, WriterLayoutFollowsTheSpec) {
  SafetensorsWriter writer;
  writer.add_values<float>("b", DType::kF32, {3}, {1.0f, 2.0f, 3.0f});
  writer.add_values<uint8_t>("a", DType::kU8, {5}, {1, 2, 3, 4, 5});
  writer.add_values<uint16_t>("c", DType::kBF16, {1}, {0x3F80});
  const auto path = scratch_dir() / "layout.safetensors";
  ASSERT_TRUE(writer.write(path.string()).ok());
  const std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(len % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + len + 12 + 5 + 2);
  const std::string header = bytes.substr(8, len);
  const auto json_end = header.find_last_not_of(' ') + 1;
  EXPECT_EQ(header[0], '{');
  EXPECT_EQ(header[json_end - 1], '}');
  const auto parsed = nlohmann::json::parse(header);
  EXPECT_EQ(parsed["b"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(parsed["a"]["data_offsets"], nlohmann::json({12, 17}));
  EXPECT_EQ(parsed["c"]["data_offsets"], nlohmann::json({17, 19}));
  EXPECT_EQ(parsed["c"]["dtype"], "BF16");
  EXPECT_EQ(parsed["a"]["shape"], nlohmann::json({5}));
  EXPECT_FALSE(parsed.contains("__metadata__"));
  float f[3];
  std::memcpy(f, bytes.data() + 8 + len, sizeof f);
  EXPECT_EQ(f[2], 3.0f);
  EXPECT_EQ(bytes.substr(8 + len + 12, 5), std::string("\x01\x02\x03\x04\x05"));
  EXPECT_EQ(bytes.substr(8 + len + 17, 2), std::string("\x80\x3F"));
}

TEST(SafetensorsRoundTrip, EmptyFile) {
  const auto path = (scratch_dir() / "empty.safetensors").string();
  ASSERT_TRUE(SafetensorsWriter().write(path).ok());
  EXPECT_EQ(read_file(path), raw_safetensors("{}      ", ""));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_TRUE((*file)->tensors().empty());
  EXPECT_TRUE((*file)->metadata().empty());
}

// A file written by hand from the spec: 8-byte length, literal JSON, 30 data bytes.
constexpr char kHandHeader[] = R"({"__metadata__":{"format":"pt"},)"
                               R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                               R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},)"
                               R"("s":{"dtype":"I64","shape":[],"data_offsets":[22,30]},)"
                               R"("e":{"dtype":"U8","shape":[0,5],"data_offsets":[30,30]}})";

std::string hand_data() {
  std::string data;
  const float w[4] = {1.0f, -2.0f, 0.5f, 4.0f};
  data.append(reinterpret_cast<const char*>(w), sizeof w);
  data.append("\x80\x3F\x00\x40\x80\xBF", 6);          // bf16 1.0, 2.0, -1.0
  data.append("\x2A\x00\x00\x00\x00\x00\x00\x00", 8);  // int64 42
  return data;
}

std::string padded(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

TEST(SafetensorsLayout, ReaderSeesAHandBuiltFile) {
  const auto path = scratch_dir() / "hand.safetensors";
  write_file(path, raw_safetensors(kHandHeader, hand_data()));
  auto file = SafetensorsFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto& tensors = (*file)->tensors();
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0].name, "w");
  EXPECT_EQ(tensors[1].name, "b");
  EXPECT_EQ(tensors[2].name, "s");
  EXPECT_EQ(tensors[3].name, "e");

  const TensorInfo* w = (*file)->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->shape, (Shape{2, 2}));
  float values[4];
  std::memcpy(values, (*file)->data(*w).data(), sizeof values);
  EXPECT_EQ(values[1], -2.0f);
  EXPECT_EQ(values[3], 4.0f);

  const TensorInfo* b = (*file)->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_EQ(as_string((*file)->data(*b)), std::string("\x80\x3F\x00\x40\x80\xBF", 6));

  const TensorInfo* s = (*file)->find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->dtype, DType::kI64);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->begin, 22u);
  EXPECT_EQ(static_cast<int>((*file)->data(*s)[0]), 42);

  const TensorInfo* e = (*file)->find("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (Shape{0, 5}));
  EXPECT_EQ((*file)->data(*e).size(), 0u);
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
}

TEST(SafetensorsLayout, WriterReproducesTheHandBuiltFileByteForByte) {
  const std::string data = hand_data();
  const auto* p = reinterpret_cast<const std::byte*>(data.data());
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");
  writer.add("w", DType::kF32, {2, 2}, {p, 16});
  writer.add("b", DType::kBF16, {3}, {p + 16, 6});
  writer.add("s", DType::kI64, {}, {p + 22, 8});
  writer.add("e", DType::kU8, {0, 5}, {});
  const auto path = scratch_dir() / "written.safetensors";
  ASSERT_TRUE(writer.write(path.string()).ok());
  const std::string written = read_file(path);
  EXPECT_EQ(written, raw_safetensors(padded(kHandHeader), data));

  // And the same header, semantically, whatever the whitespace.
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(written[i]);
  EXPECT_EQ(nlohmann::json::parse(written.substr(8, len)), nlohmann::json::parse(kHandHeader));
}

TEST(SafetensorsLayout, HeaderWhitespaceAndKeyOrderDoNotMatter) {
  // Tensors listed out of offset order, with spaces and newlines; still the same file.
  const std::string header =
      "{ \"y\" : {\"data_offsets\": [2, 3], \"shape\": [1], \"dtype\": \"I8\"},\n"
      "  \"x\" : {\"shape\": [2], \"dtype\": \"U8\", \"data_offsets\": [0, 2]} }   ";
  const auto path = scratch_dir() / "ws.safetensors";
  write_file(path, raw_safetensors(header, "\x01\x02\x03"));
  auto file = SafetensorsFile::open(path.string());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_EQ((*file)->tensors().size(), 2u);
  EXPECT_EQ((*file)->tensors()[0].name, "x");
  EXPECT_EQ(as_string((*file)->data(*(*file)->find("y"))), "\x03");
}

TEST(SafetensorsWriter, RejectsWrongByteCount) {
  SafetensorsWriter writer;
  writer.add_values<float>("layer.weight", DType::kF32, {2, 3}, {1, 2, 3, 4, 5});
  const auto path = scratch_dir() / "bad.safetensors";
  const Status status = writer.write(path.string());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"layer.weight\""), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("[2, 3]"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("24 bytes"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("20 bytes"), std::string::npos) << status.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SafetensorsWriter, RejectsDuplicateAndReservedNames) {
  const auto dir = scratch_dir();
  SafetensorsWriter twice;
  twice.add_values<uint8_t>("t", DType::kU8, {1}, {1});
  twice.add_values<uint8_t>("t", DType::kU8, {1}, {2});
  const Status s1 = twice.write((dir / "a.safetensors").string());
  EXPECT_EQ(s1.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s1.message().find("\"t\""), std::string::npos) << s1.message();

  SafetensorsWriter reserved;
  reserved.add_values<uint8_t>("__metadata__", DType::kU8, {1}, {1});
  EXPECT_EQ(reserved.write((dir / "b.safetensors").string()).code(), ErrorCode::kInvalidArgument);
}

TEST(SafetensorsWriter, PathInAMissingFolderIsNotFound) {
  SafetensorsWriter writer;
  const auto path = (scratch_dir() / "no_such_dir" / "x.safetensors").string();
  const Status status = writer.write(path);
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_NE(status.message().find("no_such_dir"), std::string::npos) << status.message();
}

TEST(SafetensorsReader, MissingFileIsNotFound) {
  const auto path = (scratch_dir() / "absent.safetensors").string();
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(file.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace qlinear
