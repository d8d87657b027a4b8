// QuantSpec::describe / same_scheme and the skip-rule helpers (formats.md §2).
#include "quant/skip_rules.h"
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

using quant_internal::find_substring_entry;
using quant_internal::is_lm_head;
using quant_internal::looks_like_regex;
using quant_internal::NamePattern;

QuantSpec int4(int group = 128) {
  QuantSpec spec;
  spec.layer = "x";
  spec.format = QuantFormat::kGptq;
  spec.quantized = true;
  spec.int_spec = IntSpec{4, group, true, false, IntPacking::kGptq, GptqZeroFormat::kV1};
  return spec;
}

TEST(QuantSpec, DescribeInt) {
  QuantSpec spec = int4();
  spec.int_spec->act_order = true;
  EXPECT_EQ(spec.describe(), "bits=4 group=128 sym act-order packing=gptq/v1");
  spec.int_spec->sym = false;
  spec.int_spec->act_order = false;
  spec.int_spec->packing = IntPacking::kAwq;
  EXPECT_EQ(spec.describe(), "bits=4 group=128 asym packing=awq");
}

TEST(QuantSpec, DescribeFp8AndDense) {
  QuantSpec spec;
  spec.quantized = true;
  spec.format = QuantFormat::kFp8;
  spec.fp8_spec = Fp8Spec{Fp8WeightGranularity::kBlock, 128,  128, ActQuant::kDynamicGroup,
                          "weight_scale_inv",           false};
  EXPECT_EQ(spec.describe(), "fp8 block[128x128] dyn-group scale=weight_scale_inv");
  spec.fp8_spec =
      Fp8Spec{Fp8WeightGranularity::kChannel, 0, 0, ActQuant::kNone, "weight_scale", false};
  EXPECT_EQ(spec.describe(), "fp8 channel w8a16");
  QuantSpec dense;
  EXPECT_EQ(dense.describe(), "dense");
}

TEST(QuantSpec, SameSchemeComparesEveryField) {
  EXPECT_TRUE(int4().same_scheme(int4()));
  EXPECT_FALSE(int4().same_scheme(int4(64)));
  QuantSpec v2 = int4();
  v2.int_spec->zero_format = GptqZeroFormat::kV2;
  EXPECT_FALSE(int4().same_scheme(v2));
  QuantSpec dense;
  EXPECT_FALSE(int4().same_scheme(dense));
  QuantSpec other_dense;
  other_dense.skip_reason = "another reason";
  EXPECT_TRUE(dense.same_scheme(other_dense));  // skipped alike, whatever the reason
  QuantSpec renamed = int4();
  renamed.layer = "y";
  EXPECT_TRUE(int4().same_scheme(renamed));  // the layer name is not part of the scheme
}

TEST(QuantSpec, EnumNames) {
  EXPECT_EQ(quant_format_name(QuantFormat::kCompressedTensors), "compressed-tensors");
  EXPECT_EQ(int_packing_name(IntPacking::kCtPacked), "ct-packed");
  EXPECT_EQ(fp8_weight_granularity_name(Fp8WeightGranularity::kTensor), "tensor");
  EXPECT_EQ(act_quant_name(ActQuant::kStaticTensor), "static-tensor");
}

TEST(SkipRules, SubstringMatching) {
  const std::vector<std::string> entries = {"lm_head", "in_proj_qkv"};
  EXPECT_EQ(find_substring_entry("model.layers.0.linear_attn.in_proj_qkv", entries), "in_proj_qkv");
  EXPECT_EQ(find_substring_entry("lm_head", entries), "lm_head");
  EXPECT_FALSE(find_substring_entry("model.layers.0.mlp.up_proj", entries).has_value());
  EXPECT_FALSE(find_substring_entry("anything", {""}).has_value());  // empty entries never match
}

TEST(SkipRules, NamePatternExactAndStartAnchoredRegex) {
  auto exact = NamePattern::compile("model.layers.0.mlp.up_proj", "ignore");
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(exact->matches("model.layers.0.mlp.up_proj"));
  EXPECT_FALSE(exact->matches("model.layers.0.mlp.up_proj2"));
  auto regex = NamePattern::compile("re:.*up_proj", "ignore");
  ASSERT_TRUE(regex.ok());
  EXPECT_TRUE(regex->matches("model.layers.0.mlp.up_proj"));
  EXPECT_TRUE(regex->matches("model.layers.0.mlp.up_proj_extra"));  // not a full match
  auto anchored = NamePattern::compile("re:mlp", "ignore");
  ASSERT_TRUE(anchored.ok());
  EXPECT_FALSE(anchored->matches("model.layers.0.mlp.up_proj"));
  auto bad = NamePattern::compile("re:a(b", "config.json:quantization_config: ignore");
  EXPECT_QUANT_ERROR(bad, ErrorCode::kInvalidArgument, "ignore", "re:a(b");
}

TEST(SkipRules, RegexCharactersMakeARegexKey) {
  EXPECT_FALSE(looks_like_regex("model.layers.0.mlp.up_proj"));
  for (const char* key : {"a*", "a+", "a?", "^a", "a$", "(a)", "[a]", "a{2}", "a|b", "a\\.b"}) {
    EXPECT_TRUE(looks_like_regex(key)) << key;
  }
}

TEST(SkipRules, LmHeadNames) {
  EXPECT_TRUE(is_lm_head("lm_head"));
  EXPECT_TRUE(is_lm_head("model.lm_head"));
  EXPECT_FALSE(is_lm_head("model.not_lm_head"));
  EXPECT_FALSE(is_lm_head("lm_head.extra"));
}

}  // namespace
}  // namespace qlinear::quant_test
