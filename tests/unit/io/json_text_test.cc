// The JSON reader behind every file qlinear parses: duplicate keys, nesting limit, key order,
// and the error text (position, no exception ids, escaped).
#include "io/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace qlinear::io_internal {
namespace {

TEST(JsonText, ParsesValuesOfEveryKind) {
  auto v = parse_json_text(R"({"a": [1, -2, 3.5, true, null, "s"], "b": {"c": {}}})", "x",
                           DuplicateKeys::kReject);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ((*v)["a"][0], 1);
  EXPECT_EQ((*v)["a"][1], -2);
  EXPECT_DOUBLE_EQ((*v)["a"][2].get<double>(), 3.5);
  EXPECT_EQ((*v)["a"][3], true);
  EXPECT_TRUE((*v)["a"][4].is_null());
  EXPECT_EQ((*v)["a"][5], "s");
  EXPECT_TRUE((*v)["b"]["c"].is_object());
}

TEST(JsonText, RejectsDuplicateKeysWithTheirPath) {
  std::vector<std::string> path;
  auto v = parse_json_text(R"({"m": {"k": 1, "k": 2}})", "f.json", DuplicateKeys::kReject, &path);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(path, (std::vector<std::string>{"m", "k"}));
  EXPECT_NE(v.status().message().find("f.json"), std::string::npos);
  EXPECT_NE(v.status().message().find("\"m\" / \"k\""), std::string::npos) << v.status().message();
}

TEST(JsonText, AllowedDuplicatesKeepTheLastValueInTheFirstPlace) {
  auto plain = parse_json_text(R"({"k": 1, "j": 0, "k": 2})", "x", DuplicateKeys::kAllow);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)["k"], 2);
  auto ordered = parse_ordered_json_text(R"({"z": 1, "a": 0, "z": 2})", "x", DuplicateKeys::kAllow);
  ASSERT_TRUE(ordered.ok());
  ASSERT_EQ(ordered->size(), 2u);
  EXPECT_EQ(ordered->begin().key(), "z");
  EXPECT_EQ(ordered->begin().value(), 2);
}

TEST(JsonText, OrderedKeepsWrittenOrder) {
  auto v = parse_ordered_json_text(R"({"b": 1, "a": 2, "c": {"y": 1, "x": 2}})", "x",
                                   DuplicateKeys::kReject);
  ASSERT_TRUE(v.ok());
  std::vector<std::string> keys;
  for (const auto& [k, value] : v->items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ((*v)["c"].begin().key(), "y");
}

TEST(JsonText, NestingIsBounded) {
  const std::string deep =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  auto v = parse_json_text(deep, "deep.json", DuplicateKeys::kAllow);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(v.status().message().find("nested more than"), std::string::npos);
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json_text(ok, "ok.json", DuplicateKeys::kAllow).ok());
}

TEST(JsonText, SyntaxErrorsNameThePosition) {
  auto v = parse_json_text("{\"a\": tru}", "bad.json", DuplicateKeys::kAllow);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("bad.json: invalid JSON at byte"), std::string::npos)
      << v.status().message();
  EXPECT_EQ(v.status().message().find("[json.exception"), std::string::npos);
  auto control = parse_json_text(std::string("{\"a\x1b\": 1}"), "c.json", DuplicateKeys::kAllow);
  ASSERT_FALSE(control.ok());  // a raw control character is not JSON
  EXPECT_EQ(control.status().message().find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace qlinear::io_internal
