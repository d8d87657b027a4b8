// model.safetensors.index.json rules, from text alone.
#include "io/shard_index.h"

#include <gtest/gtest.h>

namespace qlinear {
namespace {

Status parse_error(const std::string& text) { return parse_shard_index(text, "idx.json").status(); }

TEST(ShardIndex, MapsTensorsToShards) {
  auto index = parse_shard_index(
      R"({"metadata": {}, "weight_map": {"a": "s1.safetensors", "b": "s1.safetensors",
          "c": "sub/s2.safetensors"}})",
      "idx.json");
  ASSERT_TRUE(index.ok()) << index.status().to_string();
  EXPECT_EQ(index->shard_of.at("c"), "sub/s2.safetensors");
  EXPECT_EQ(index->first_tensor.size(), 2u);
  EXPECT_EQ(index->first_tensor.at("s1.safetensors"), "a");
}

TEST(ShardIndex, EmptyWeightMapIsAnError) {
  const Status s = parse_error(R"({"weight_map": {}})");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("\"weight_map\" is empty"), std::string::npos) << s.message();
}

TEST(ShardIndex, ShardOutsideTheFolderIsRefused) {
  for (const char* shard : {"/etc/passwd", "../x.safetensors", "a/../../x.safetensors"}) {
    const Status s = parse_error(std::string(R"({"weight_map": {"t.weight": ")") + shard + "\"}}");
    EXPECT_EQ(s.code(), ErrorCode::kRefusedFile) << shard;
    EXPECT_NE(s.message().find(shard), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("t.weight"), std::string::npos) << s.message();
  }
}

TEST(ShardIndex, ControlCharactersInNamesAreRefused) {
  const Status nul = parse_error(R"({"weight_map": {"t": "a\u0000.safetensors"}})");
  EXPECT_EQ(nul.code(), ErrorCode::kCorrupt);
  EXPECT_NE(nul.message().find("a\\x00.safetensors"), std::string::npos) << nul.message();
  const Status esc = parse_error(R"({"weight_map": {"t\u001b[31m": "a.safetensors"}})");
  EXPECT_EQ(esc.code(), ErrorCode::kCorrupt);
  EXPECT_NE(esc.message().find("t\\x1b[31m"), std::string::npos) << esc.message();
  EXPECT_EQ(esc.message().find('\x1b'), std::string::npos);
}

TEST(ShardIndex, StructureErrors) {
  EXPECT_EQ(parse_error("[]").code(), ErrorCode::kCorrupt);
  EXPECT_EQ(parse_error(R"({"weight_map": []})").code(), ErrorCode::kCorrupt);
  const Status twice = parse_error(R"({"weight_map": {"a": "x", "a": "y"}})");
  EXPECT_NE(twice.message().find("\"a\" listed twice"), std::string::npos) << twice.message();
  const Status number = parse_error(R"({"weight_map": {"a": 3}})");
  EXPECT_NE(number.message().find("weight_map[\"a\"] is 3"), std::string::npos);
}

}  // namespace
}  // namespace qlinear
