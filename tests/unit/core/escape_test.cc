// Escaping untrusted names for the terminal, and strict parsing of numbers users type.
#include "core/escape.h"

#include <gtest/gtest.h>

#include "core/parse_number.h"

namespace qlinear {
namespace {

TEST(Escape, PrintableTextIsUnchanged) {
  EXPECT_EQ(escape_for_terminal("model.layers.0.q_proj"), "model.layers.0.q_proj");
  EXPECT_EQ(escape_for_terminal("größe ∑ 模型"), "größe ∑ 模型");  // UTF-8 is kept
  EXPECT_FALSE(needs_escape("größe ∑ 模型"));
}

TEST(Escape, ControlCharactersAndBadUtf8AreEscaped) {
  EXPECT_EQ(escape_for_terminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_for_terminal("\x1b[2Jx"), "\\x1b[2Jx");
  EXPECT_EQ(escape_for_terminal("line\rover"), "line\\x0dover");
  EXPECT_EQ(escape_for_terminal("del\x7f"), "del\\x7f");
  EXPECT_EQ(escape_for_terminal("\xc2\x9b"
                                "31m"),
            "\\xc2\\x9b31m");  // C1 CSI
  EXPECT_EQ(escape_for_terminal("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_for_terminal("\xe2\x82"), "\\xe2\\x82");           // truncated sequence
  EXPECT_EQ(escape_for_terminal("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(escape_for_terminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_TRUE(needs_escape(std::string("\0", 1)));
}

TEST(Escape, MessagesKeepTheirNewlines) {
  EXPECT_EQ(escape_message("one\ntwo\x1b"), "one\ntwo\\x1b");
  EXPECT_EQ(escape_for_terminal("one\ntwo"), "one\\x0atwo");
}

TEST(ParseNumber, AcceptsDecimalIntegersInRange) {
  EXPECT_EQ(*parse_int_in_range("0", 0, 10, "--n"), 0);
  EXPECT_EQ(*parse_int_in_range("-5", -10, 10, "--n"), -5);
  EXPECT_EQ(*parse_int_in_range("9223372036854775807", 0, INT64_MAX, "--n"), INT64_MAX);
  EXPECT_EQ(*parse_int_in_range("-9223372036854775808", INT64_MIN, 0, "--n"), INT64_MIN);
}

TEST(ParseNumber, RejectsWithAShortMessage) {
  for (const char* text : {"-1", "11", "", "-", "1.5", "0x10", " 1", "1e3", "99999999999999999999",
                           "9223372036854775808"}) {
    auto r = parse_int_in_range(text, 0, 10, "--threads");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--threads"), std::string::npos);
    EXPECT_NE(r.status().message().find("[0, 10]"), std::string::npos);
    EXPECT_LT(r.status().message().size(), 100u) << r.status().message();
  }
  const std::string huge(1000, '9');
  EXPECT_LT(parse_int_in_range(huge, 0, 10, "--n").status().message().size(), 120u);
}

TEST(ParseNumber, DimsNameTheBadExtentAndTheProductLimit) {
  auto ok = parse_dims_2d("4096x14336", 1 << 20, int64_t{1} << 33, "--shape");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, 4096);
  EXPECT_EQ(ok->second, 14336);
  const Status huge =
      parse_dims_2d("4294967296x4294967296", 1 << 20, int64_t{1} << 33, "--shape").status();
  EXPECT_NE(huge.message().find("K \"4294967296\""), std::string::npos) << huge.message();
  const Status product =
      parse_dims_2d("1048576x1048576", 1 << 20, int64_t{1} << 33, "--shape").status();
  EXPECT_NE(product.message().find("K*N = 1099511627776"), std::string::npos) << product.message();
  EXPECT_FALSE(parse_dims_2d("64", 1 << 20, 1 << 30, "--shape").ok());
  EXPECT_FALSE(parse_dims_2d("64x", 1 << 20, 1 << 30, "--shape").ok());
  EXPECT_FALSE(parse_dims_2d("0x64", 1 << 20, 1 << 30, "--shape").ok());
}

}  // namespace
}  // namespace qlinear
