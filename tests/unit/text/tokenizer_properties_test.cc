// Properties on random input: byte-level tokenizers decode what they encode back to the same
// text; streaming decode never emits half a character, never takes text back, and ends where
// decode ends, on every prefix. Plus the UTF-8 repair against Unicode's own example.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "text/regex.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "text_test_data.h"

namespace qlinear::text {
namespace {

// Random text over many scripts, whitespace, controls, emoji and combining marks.
std::string random_text(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> kRanges[] = {
      {0x20, 0x7E},        {0x20, 0x7E},     {0x09, 0x0D},       {0x00, 0x1F},
      {0xA0, 0x24F},       {0x300, 0x36F},   {0x370, 0x3FF},     {0x400, 0x4FF},
      {0x590, 0x6FF},      {0x900, 0x97F},   {0xE00, 0xE7F},     {0x1100, 0x11FF},
      {0x2000, 0x206F},    {0x3000, 0x30FF}, {0x4E00, 0x9FFF},   {0xAC00, 0xD7A3},
      {0xE000, 0xE0FF},    {0xFF00, 0xFFEF}, {0x1F300, 0x1FAFF}, {0x20000, 0x2A6DF},
      {0x10FF00, 0x10FFFF}};
  std::uniform_int_distribution<int> length(0, 80);
  std::uniform_int_distribution<size_t> pick(0, std::size(kRanges) - 1);
  std::string s;
  const int n = length(rng);
  for (int i = 0; i < n; ++i) {
    const auto [lo, hi] = kRanges[pick(rng)];
    char32_t cp = std::uniform_int_distribution<char32_t>(lo, hi)(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';
    append_utf8(s, cp);
  }
  return s;
}

class ByteLevelRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(ByteLevelRoundTrip, DecodeOfEncodeIsTheText) {
  const Tokenizer* tok = testing::tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(20261201);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    std::string s = random_text(rng);
    // Qwen3 normalizes to NFC first: its round trip holds for text already in NFC.
    if (GetParam() == "qwen3") s = normalize_unicode(s, NormalForm::kNfc);
    Result<std::vector<int32_t>> ids = tok->encode(s, false);
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(tok->decode(*ids, false), s) << "case " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

INSTANTIATE_TEST_SUITE_P(Real, ByteLevelRoundTrip,
                         ::testing::Values("llama3", "qwen3", "deepseek_v3"));

class StreamingDecode : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingDecode, EveryPrefixMatchesDecode) {
  const Tokenizer* tok = testing::tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any_id(0, tok->vocab_size() - 1);
  // Byte tokens (<0x..>) make the hardest streams for SentencePiece-style decoders.
  std::vector<int32_t> byte_ids;
  for (int b = 0; b < 256; ++b) {
    if (const auto id = tok->token_to_id(fmt::format("<0x{:02X}>", b))) byte_ids.push_back(*id);
  }
  for (int round = 0; round < 40; ++round) {
    std::vector<int32_t> ids;
    if (round % 2 == 0) {
      Result<std::vector<int32_t>> e = tok->encode(random_text(rng), true);
      ASSERT_TRUE(e.ok());
      ids = *e;
    } else {
      const int n = std::uniform_int_distribution<int>(1, 30)(rng);
      for (int k = 0; k < n; ++k) {
        const bool byte = !byte_ids.empty() && rng() % 2 == 0;
        ids.push_back(byte ? byte_ids[rng() % byte_ids.size()] : any_id(rng));
      }
    }
    for (const bool skip : {false, true}) {
      StreamDecoder stream = tok->stream_decoder(skip);
      std::string emitted;
      for (size_t n = 0; n <= ids.size(); ++n) {
        if (n > 0) {
          const std::string part = stream.push(ids[n - 1]);
          ASSERT_TRUE(is_valid_utf8(part));
          emitted += part;
          ASSERT_EQ(incomplete_utf8_tail(emitted), 0u);
        }
        const std::string whole = tok->decode(std::span(ids.data(), n), skip);
        ASSERT_EQ(whole.compare(0, emitted.size(), emitted), 0) << "round " << round << " n " << n;
        StreamDecoder copy = stream;
        ASSERT_EQ(emitted + copy.finish(), whole) << "round " << round << " n " << n;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Real, StreamingDecode,
                         ::testing::Values("llama3", "qwen3", "llama2", "gemma3"));
INSTANTIATE_TEST_SUITE_P(Synthetic, StreamingDecode,
                         ::testing::Values("synthetic_metaspace_always_nosplit",
                                           "synthetic_prepend_unk_nodecoder",
                                           "synthetic_metaspace_first"));

// Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts", table 3-8.
TEST(Utf8, RepairFollowsUnicodeMaximalSubparts) {
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r(kReplacementUtf8);
  EXPECT_EQ(to_valid_utf8(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), r + r);                  // overlong
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), r + r + r);          // surrogate
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(to_valid_utf8("\xE4\xBD"), r);                      // cut short
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_EQ(incomplete_utf8_tail("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xE4\x41"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\xE4"), 1u);
}

TEST(Regex, OnigurumaClassesKeepTheirMeaning) {
  // Oniguruma's \s is White_Space: U+180E (a format character since Unicode 6.3) is not in it.
  Result<Regex> space = Regex::compile("\\s+", "test");
  ASSERT_TRUE(space.ok()) << space.status().to_string();
  std::vector<Span> found;
  ASSERT_TRUE(space
                  ->find_all("a\xE1\xA0\x8E"
                             "b \t\xE3\x80\x80"
                             "c",
                             found)
                  .ok());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].begin, 5u);
  // \h is a hexadecimal digit in Oniguruma.
  Result<Regex> hex = Regex::compile("\\h+", "test");
  ASSERT_TRUE(hex.ok());
  found.clear();
  ASSERT_TRUE(hex->find_all("zz 0fA9 q", found).ok());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].end - found[0].begin, 4u);
  // Empty matches right after a match are skipped, as Rust's and Oniguruma's find_iter do.
  Result<Regex> star = Regex::compile("a*", "test");
  ASSERT_TRUE(star.ok());
  found.clear();
  ASSERT_TRUE(star->find_all("baa", found).ok());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].begin, 0u);
  EXPECT_EQ(found[0].end, 0u);
  EXPECT_EQ(found[1].begin, 1u);
  EXPECT_EQ(found[1].end, 3u);
}

}  // namespace
}  // namespace qlinear::text
