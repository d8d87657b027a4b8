// Checkpoint folders: single file, sharded with an index, every inconsistency between the index
// and its shards, and every place a quantization config can live.
#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "io_test_util.h"

namespace qlinear {
namespace {

namespace fs = std::filesystem;
using io_test::scratch_dir;
using io_test::write_file;

constexpr char kConfig[] = R"({"architectures":["LlamaForCausalLM"],"hidden_size":8})";
constexpr char kIndex[] = "model.safetensors.index.json";
constexpr char kShard1[] = "model-00001-of-00002.safetensors";
constexpr char kShard2[] = "model-00002-of-00002.safetensors";

// A shard holding one small U8 tensor per name, each filled with its name's first letter.
void write_shard(const fs::path& path, std::initializer_list<std::string> names) {
  SafetensorsWriter writer;
  for (const auto& name : names) {
    writer.add_values<uint8_t>(name, DType::kU8, {2}, {static_cast<uint8_t>(name[0]), 1});
  }
  ASSERT_TRUE(writer.write(path.string()).ok());
}

void write_index(const fs::path& dir, const std::string& weight_map) {
  write_file(dir / kIndex, R"({"metadata":{"total_size":8},"weight_map":)" + weight_map + "}");
}

fs::path sharded_dir() {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  write_shard(dir / kShard1, {"a.weight", "b.weight"});
  write_shard(dir / kShard2, {"c.weight"});
  return dir;
}

void expect_error(const Result<Checkpoint>& ckpt, ErrorCode code,
                  std::initializer_list<std::string> needles) {
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), code) << ckpt.status().to_string();
  for (const auto& needle : needles) {
    EXPECT_NE(ckpt.status().message().find(needle), std::string::npos)
        << "'" << needle << "' not in: " << ckpt.status().message();
  }
}

TEST(Checkpoint, SingleFile) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  write_shard(dir / "model.safetensors", {"z.bias", "m.weight", "a.weight"});
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  auto ckpt = Checkpoint::open(
      dir.string(), [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); });
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->dir(), dir.string());
  EXPECT_EQ(ckpt->config()["hidden_size"], 8);
  EXPECT_TRUE(ckpt->quant_config().is_null());
  EXPECT_EQ(ckpt->quant_config_source(), "");
  EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"a.weight", "m.weight", "z.bias"}));
  const uint64_t size = fs::file_size(dir / "model.safetensors");
  EXPECT_EQ(ckpt->bytes_on_disk(), size);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(size, size));
  ASSERT_EQ(ckpt->files().size(), 1u);

  auto ref = ckpt->get("m.weight");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->name(), "m.weight");
  EXPECT_EQ(ref->dtype(), DType::kU8);
  EXPECT_EQ(ref->shape(), (Shape{2}));
  ASSERT_EQ(ref->bytes().size(), 2u);
  EXPECT_EQ(static_cast<char>(ref->bytes()[0]), 'm');
  EXPECT_EQ(ref->where(), "model.safetensors: \"m.weight\"");

  EXPECT_FALSE(ckpt->find("nope").has_value());
  EXPECT_FALSE(ckpt->find("m").has_value());
  auto missing = ckpt->get("nope.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("\"nope.weight\""), std::string::npos);
  EXPECT_NE(missing.status().message().find(dir.string()), std::string::npos);

  // Moving the checkpoint keeps every reference valid.
  Checkpoint moved = std::move(ckpt).value();
  EXPECT_EQ(static_cast<char>(moved.get("z.bias")->bytes()[0]), 'z');
}

TEST(Checkpoint, ShardedWithIndex) {
  const auto dir = sharded_dir();
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}"}})", kShard1,
                               kShard2));
  int calls = 0;
  uint64_t last_done = 0;
  uint64_t last_total = 0;
  auto ckpt = Checkpoint::open(dir.string(), [&](uint64_t done, uint64_t total) {
    ++calls;
    EXPECT_GT(done, last_done);
    last_done = done;
    last_total = total;
  });
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  const uint64_t total = fs::file_size(dir / kShard1) + fs::file_size(dir / kShard2);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(last_done, total);
  EXPECT_EQ(last_total, total);
  EXPECT_EQ(ckpt->bytes_on_disk(), total);
  EXPECT_EQ(ckpt->files().size(), 2u);
  EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"a.weight", "b.weight", "c.weight"}));
  EXPECT_EQ(ckpt->get("c.weight")->where(), std::string(kShard2) + ": \"c.weight\"");
  EXPECT_EQ(ckpt->get("b.weight")->file->file_name(), kShard1);
  EXPECT_EQ(static_cast<char>(ckpt->get("c.weight")->bytes()[0]), 'c');
}

TEST(Checkpoint, IndexOnlyOpensListedShards) {
  const auto dir = sharded_dir();
  write_shard(dir / "consolidated.safetensors", {"a.weight"});  // not in the index: ignored
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}"}})", kShard1,
                               kShard2));
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->files().size(), 2u);
}

TEST(Checkpoint, WithoutIndexOnlyModelSafetensorsIsLoaded) {
  const auto dir = sharded_dir();  // two shards, no index
  write_file(dir / "notes.txt", "not a tensor file");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kNotFound,
               {"no model.safetensors and no model.safetensors.index.json", kShard1, kShard2});
  write_shard(dir / "model.safetensors", {"m.weight"});
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  ASSERT_EQ(ckpt->files().size(), 1u);
  EXPECT_EQ(ckpt->files()[0]->file_name(), "model.safetensors");
  EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"m.weight"}));
}

TEST(Checkpoint, MissingShard) {
  const auto dir = sharded_dir();
  fs::remove(dir / kShard2);
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}"}})", kShard1,
                               kShard2));
  expect_error(
      Checkpoint::open(dir.string()), ErrorCode::kNotFound,
      {fmt::format("missing shard {} listed in {} for tensor \"c.weight\"", kShard2, kIndex)});
}

TEST(Checkpoint, TensorListedTwiceInIndex) {
  const auto dir = sharded_dir();
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}",)"
                               R"("a.weight":"{1}"}})",
                               kShard1, kShard2));
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {kIndex, "\"a.weight\"", "twice"});
}

TEST(Checkpoint, TensorInIndexButNotInItsShard) {
  const auto dir = sharded_dir();
  // c.weight lives in shard 2, the index claims shard 1.
  write_index(dir,
              fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{0}"}})", kShard1));
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {"\"c.weight\"", kShard1, kIndex});
}

TEST(Checkpoint, TensorInIndexButInNoShard) {
  const auto dir = sharded_dir();
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}",)"
                               R"("d.weight":"{1}"}})",
                               kShard1, kShard2));
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {"\"d.weight\"", kShard2, "does not contain"});
}

TEST(Checkpoint, TensorInTwoShards) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  write_shard(dir / kShard1, {"a.weight", "b.weight"});
  write_shard(dir / kShard2, {"b.weight", "c.weight"});
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","b.weight":"{0}","c.weight":"{1}"}})", kShard1,
                               kShard2));
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {"\"b.weight\"", kShard1, kShard2});
}

TEST(Checkpoint, TensorInShardButNotInIndexIsKept) {
  const auto dir = sharded_dir();
  write_index(dir, fmt::format(R"({{"a.weight":"{0}","c.weight":"{1}"}})", kShard1, kShard2));
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_TRUE(ckpt->find("b.weight").has_value());
}

TEST(Checkpoint, BadIndex) {
  const auto dir = sharded_dir();
  write_file(dir / kIndex, R"({"weight_map": [1]})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt, {kIndex, "weight_map"});
  write_file(dir / kIndex, R"({"weight_map": {"a.weight": 3}})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt, {kIndex, "\"a.weight\"", "3"});
  write_file(dir / kIndex, R"({"weight_map": )");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt, {kIndex, "byte"});
}

TEST(Checkpoint, NoSafetensorsFile) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kNotFound,
               {dir.string(), "no model.safetensors and no model.safetensors.index.json"});
}

TEST(Checkpoint, CorruptShardNamesTheFile) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  write_file(dir / "model.safetensors", "short");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {(dir / "model.safetensors").string(), "5 bytes"});
}

TEST(Checkpoint, MissingDirectory) {
  const auto dir = scratch_dir() / "absent";
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kNotFound, {dir.string()});
}

TEST(Checkpoint, MissingConfig) {
  const auto dir = scratch_dir();
  write_shard(dir / "model.safetensors", {"a"});
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kNotFound,
               {(dir / "config.json").string()});
}

TEST(Checkpoint, BadConfigJson) {
  const auto dir = scratch_dir();
  write_shard(dir / "model.safetensors", {"a"});
  // The '}' where a value is expected is the 16th byte (nlohmann counts from 1).
  write_file(dir / "config.json", R"({"hidden_size":})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {(dir / "config.json").string(), "byte 16"});
  write_file(dir / "config.json", R"(["not", "an", "object"])");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt, {"config.json", "array"});
}

// --- quantization config ---------------------------------------------------------------------

fs::path quant_dir(const std::string& config) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", config);
  write_shard(dir / "model.safetensors", {"a"});
  return dir;
}

TEST(CheckpointQuantConfig, FromConfigJson) {
  const auto dir = quant_dir(R"({"quantization_config":{"quant_method":"awq","bits":4}})");
  write_file(dir / "quantize_config.json", R"({"bits":8})");  // lower precedence
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->quant_config()["quant_method"], "awq");
  EXPECT_EQ(ckpt->quant_config()["bits"], 4);
  EXPECT_EQ(ckpt->quant_config_source(), "config.json:quantization_config");
}

TEST(CheckpointQuantConfig, FromLegacyCompressionConfig) {
  const auto dir =
      quant_dir(R"({"compression_config":{"quant_method":"compressed-tensors","format":"x"}})");
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->quant_config()["quant_method"], "compressed-tensors");
  EXPECT_EQ(ckpt->quant_config_source(), "config.json:compression_config");
}

TEST(CheckpointQuantConfig, FromQuantizeConfigJson) {
  const auto dir = quant_dir(kConfig);
  write_file(dir / "quantize_config.json", R"({"bits":4,"group_size":128,"desc_act":true})");
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->quant_config()["group_size"], 128);
  EXPECT_EQ(ckpt->quant_config_source(), "quantize_config.json");
}

TEST(CheckpointQuantConfig, FromQuantConfigJson) {
  const auto dir = quant_dir(kConfig);
  write_file(dir / "quant_config.json", R"({"w_bit":4,"q_group_size":64})");
  write_file(dir / "quantize_config.json", R"({"bits":8})");  // lower precedence
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->quant_config()["w_bit"], 4);
  EXPECT_EQ(ckpt->quant_config_source(), "quant_config.json");
}

TEST(CheckpointQuantConfig, FromQuantizationConfigJson) {
  const auto dir = quant_dir(kConfig);
  write_file(dir / "quantization_config.json", R"({"quant_method":"auto-round","bits":4})");
  write_file(dir / "quant_config.json", R"({"w_bit":8})");  // lower precedence
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt->quant_config()["quant_method"], "auto-round");
  EXPECT_EQ(ckpt->quant_config_source(), "quantization_config.json");
}

TEST(CheckpointQuantConfig, BadQuantConfigFileNamesIt) {
  const auto dir = quant_dir(kConfig);
  write_file(dir / "quantize_config.json", R"({"bits":4,})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt,
               {"quantize_config.json", "byte"});
}

TEST(ReadJsonFile, NamesFileAndPosition) {
  const auto dir = scratch_dir();
  write_file(dir / "x.json", "{\"a\": 1,\n \"b\": tru}");
  auto json = read_json_file((dir / "x.json").string());
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(json.status().message().find((dir / "x.json").string()), std::string::npos);
  EXPECT_NE(json.status().message().find("byte 19"), std::string::npos) << json.status().message();
  auto missing = read_json_file((dir / "y.json").string());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("y.json"), std::string::npos);
  write_file(dir / "ok.json", R"({"k":[1,2]})");
  auto ok = read_json_file((dir / "ok.json").string());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["k"][1], 2);
}

// --- hostile folders ---------------------------------------------------------------------------

TEST(CheckpointHostile, ConfigThatIsAFifoIsRefusedWithoutHanging) {
  const auto dir = scratch_dir();
  write_shard(dir / "model.safetensors", {"a"});
  ASSERT_EQ(::mkfifo((dir / "config.json").c_str(), 0600), 0);
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile, {"config.json", "FIFO"});
}

TEST(CheckpointHostile, ConfigLinkedToDevZeroIsRefused) {
  const auto dir = scratch_dir();
  write_shard(dir / "model.safetensors", {"a"});
  fs::create_symlink("/dev/zero", dir / "config.json");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {"config.json", "/dev/zero"});
}

TEST(CheckpointHostile, OversizedConfigIsRefusedBeforeReading) {
  const auto dir = scratch_dir();
  write_shard(dir / "model.safetensors", {"a"});
  {
    std::ofstream out(dir / "config.json");
    out << "{}";
  }
  fs::resize_file(dir / "config.json", kMaxJsonFileBytes + 1);  // sparse: no 64 MiB written
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile, {"config.json", "64 MiB"});
}

TEST(CheckpointHostile, QuantConfigFileThatIsAFifoIsNamed) {
  const auto dir = quant_dir(kConfig);
  ASSERT_EQ(::mkfifo((dir / "quantize_config.json").c_str(), 0600), 0);
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {"quantize_config.json", "FIFO"});
}

TEST(CheckpointHostile, IndexNamingFilesOutsideTheFolderIsRefused) {
  const auto dir = sharded_dir();
  write_index(dir, R"({"a.weight":"/etc/passwd"})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {kIndex, "/etc/passwd", "a.weight"});
  write_index(dir, R"({"a.weight":"../x.safetensors"})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {kIndex, "../x.safetensors"});
  // A shard that is a link leading out of the folder.
  fs::create_symlink("/etc/passwd", dir / "evil.safetensors");
  write_index(dir, R"({"a.weight":"evil.safetensors"})");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {"evil.safetensors", "outside the model folder"});
}

TEST(CheckpointHostile, EmptyWeightMapIsAnError) {
  const auto dir = sharded_dir();
  write_index(dir, "{}");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kCorrupt, {kIndex, "empty"});
}

TEST(CheckpointHostile, SafetensorsEntryOfTheWrongTypeIsNamed) {
  const auto dir = scratch_dir();
  write_file(dir / "config.json", kConfig);
  fs::create_directories(dir / "model.safetensors");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {"model.safetensors", "is a directory"});
  fs::remove(dir / "model.safetensors");
  ASSERT_EQ(::mkfifo((dir / "model.safetensors").c_str(), 0600), 0);
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kRefusedFile,
               {"model.safetensors", "FIFO"});
  fs::remove(dir / "model.safetensors");
  fs::create_symlink("gone.safetensors", dir / "model.safetensors");
  expect_error(Checkpoint::open(dir.string()), ErrorCode::kNotFound,
               {"model.safetensors", "dangling", "gone.safetensors"});
}

TEST(CheckpointHostile, QuantConfigIsReadOnceWithItsKeyOrder) {
  const auto dir = quant_dir(R"({"quantization_config":{"quant_method":"gptq","z":1,"a":2}})");
  auto ckpt = Checkpoint::open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  std::vector<std::string> keys;
  for (const auto& [key, value] : ckpt->quant_config_ordered().items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"quant_method", "z", "a"}));
}

}  // namespace
}  // namespace qlinear
