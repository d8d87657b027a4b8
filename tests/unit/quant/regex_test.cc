// Config regexes match in linear time (RE2): the patterns below made std::regex time out or hit
// undefined behaviour when fuzz_quant_gptq / fuzz_quant_auto_round / fuzz_quant_any found them.
#include <gtest/gtest.h>

#include <string>

#include "quant/skip_rules.h"
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

using quant_internal::try_compile_regex;

TEST(ConfigRegex, PythonMatchAndSearchSemantics) {
  auto re = try_compile_regex(R"(model\.layers\.[0-9]+\.mlp)");
  ASSERT_TRUE(re.has_value());
  EXPECT_TRUE(re->matches_from_start("model.layers.12.mlp.down_proj"));
  EXPECT_FALSE(re->matches_from_start("x.model.layers.12.mlp"));
  EXPECT_TRUE(re->matches_anywhere("x.model.layers.12.mlp"));
  auto icase = try_compile_regex("(?i)LM_HEAD");
  ASSERT_TRUE(icase.has_value());
  EXPECT_TRUE(icase->matches_anywhere("lm_head"));
}

TEST(ConfigRegex, CatastrophicPatternsRunInLinearTime) {
  const std::string name(5000, 'a');  // a backtracking engine needs ~2^5000 steps here
  for (const char* pattern : {"(a*)*b", "(a|aa)*b", "(a+)+$b", ".*.*.*.*.*.*.*.*.*.*b"}) {
    auto re = try_compile_regex(pattern);
    ASSERT_TRUE(re.has_value()) << pattern;
    EXPECT_FALSE(re->matches_from_start(name)) << pattern;
    EXPECT_FALSE(re->matches_anywhere(name)) << pattern;
  }
}

TEST(ConfigRegex, UnsupportedOrOversizedPatternsAreRejectedWithAReason) {
  for (const char* pattern : {"(?=x)y", "(?<=x)y", "(a)\\1", "m***", "a\\++++*+", "(unclosed"}) {
    std::string why;
    EXPECT_FALSE(try_compile_regex(pattern, &why).has_value()) << pattern;
    EXPECT_FALSE(why.empty()) << pattern;
  }
  std::string why;
  EXPECT_FALSE(try_compile_regex(std::string(quant_internal::kMaxRegexChars + 1, 'a'), &why));
  EXPECT_NE(why.find("longer than"), std::string::npos) << why;
}

TEST(ConfigRegex, PatternsThatBrokeStdRegexCompileAsLiterals) {
  // std::regex overflowed a long (UBSan) on the backreference number and on the repeat count;
  // RE2 reads the first as octal escape + digits, the second as literal text (a count it cannot
  // represent is no repeat), and matches both in linear time.
  auto repeat = try_compile_regex("a{99999999999}");
  ASSERT_TRUE(repeat.has_value());
  EXPECT_TRUE(repeat->matches_from_start("a{99999999999}"));
  EXPECT_FALSE(repeat->matches_anywhere(std::string(100000, 'a')));
  std::string why;
  auto octal = try_compile_regex("\\6222222222222222222222222221", &why);
  ASSERT_TRUE(octal.has_value()) << why;
  EXPECT_FALSE(octal->matches_anywhere("model.layers.0.self_attn.o_proj"));
}

TEST(ConfigRegex, FuzzFoundGptqDynamicKeyIsAnErrorNamingIt) {
  // fuzz_quant_any: a backreference number that overflowed std::regex's parser (UBSan).
  auto config = parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 32,
      "dynamic": {"+:model\\.lay(rs\\622222222222222222222221\\.o_proj": {}}})");
  EXPECT_QUANT_ERROR(config, ErrorCode::kInvalidArgument, "dynamic", "not a regular expression");
}

TEST(ConfigRegex, FuzzFoundAutoRoundKeyIsSkippedLikeAutoRoundDoes) {
  // fuzz_quant_auto_round: "m***..." timed out in std::regex; AutoRound skips keys that do not
  // compile, and so does qlinear.
  auto config = parse(R"({"quant_method": "auto-round", "bits": 4, "group_size": 32,
      "packing_format": "auto_round:auto_gptq",
      "extra_config": {"m***zz+zzz.*down_proj": {"bits": 16}}})");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto spec = (*config)->resolve("model.layers.0.mlp.down_proj");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->quantized);
}

}  // namespace
}  // namespace qlinear::quant_test
