// Encode and decode against Hugging Face's own Rust tokenizer: the goldens in
// tests/data/text/goldens/ were written by tools/text/make_goldens.mjs from
// @anush008/tokenizers (tokenizers 0.22.2) on the same tokenizer files, for 237 strings
// (English, code, CJK, Arabic and other scripts, emoji with ZWJ sequences, combining marks,
// runs of whitespace, digits, special tokens inside text, invalid UTF-8, strings aimed at
// added-token flags and normalizers).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "text_test_data.h"

namespace qlinear::text {
namespace {

using nlohmann::json;
using testing::case_text;
using testing::golden_dir;
using testing::read_json;
using testing::tokenizer;

std::string shown(const std::string& name, const std::string& text) {
  return name + " " + json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {};

// Every golden string: ids with and without special tokens, and the token strings.
TEST_P(GoldenTokenizer, EncodeMatchesHuggingFace) {
  const Tokenizer* tok = tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  std::map<std::string, json> strings;
  const json all_strings = read_json(golden_dir() + "/golden_strings.json");
  for (const json& s : all_strings["strings"]) {
    strings[s["name"].get<std::string>()] = s;
  }
  const json golden = read_json(golden_dir() + "/goldens/" + GetParam() + ".json");
  ASSERT_GE(golden["cases"].size(), 100u);
  int failures = 0;
  for (size_t i = 0; i < golden["cases"].size() && failures < 10; ++i) {
    const json& g = golden["cases"][i];
    const std::string name = g["name"].get<std::string>();
    ASSERT_EQ(strings.count(name), 1u) << name;
    const std::string text = case_text(strings[name]);
    Result<Encoding> e = tok->encode_with_tokens(text, true);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const auto want = g["ids"].get<std::vector<int32_t>>();
    if (e->ids != want) {
      ++failures;
      ADD_FAILURE() << shown(g["name"], text) << "\n  got  " << json(e->ids).dump() << "\n  want "
                    << json(want).dump() << "\n  tokens "
                    << json(e->tokens).dump(-1, ' ', false, json::error_handler_t::replace);
      continue;
    }
    if (g.contains("tokens")) {
      EXPECT_EQ(e->tokens, g["tokens"].get<std::vector<std::string>>()) << shown(g["name"], text);
    }
    Result<std::vector<int32_t>> plain = tok->encode(text, false);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, g["ids_plain"].get<std::vector<int32_t>>()) << shown(g["name"], text);
  }
}

// Decoding the golden ids, keeping and skipping special tokens.
TEST_P(GoldenTokenizer, DecodeMatchesHuggingFace) {
  const Tokenizer* tok = tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const json golden = read_json(golden_dir() + "/goldens/" + GetParam() + ".json");
  for (const json& g : golden["cases"]) {
    const auto ids = g["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->decode(ids, false), g["decoded"].get<std::string>()) << g["name"];
    EXPECT_EQ(tok->decode(ids, true), g["decoded_skip"].get<std::string>()) << g["name"];
  }
}

// Streaming: after each prefix of ids, what push() returned plus a finish() on a copy of the
// stream equals Hugging Face's decode of that prefix; push() output alone never ends inside a
// UTF-8 character and is never taken back.
TEST_P(GoldenTokenizer, StreamingDecodeMatchesEveryPrefix) {
  const Tokenizer* tok = tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const json golden = read_json(golden_dir() + "/goldens/" + GetParam() + ".json");
  for (const json& s : golden["streams"]) {
    const auto ids = s["ids"].get<std::vector<int32_t>>();
    const auto prefixes = s["prefixes"].get<std::vector<std::string>>();
    ASSERT_EQ(prefixes.size(), ids.size() + 1);
    StreamDecoder stream = tok->stream_decoder(false);
    std::string emitted;
    for (size_t n = 0; n <= ids.size(); ++n) {
      if (n > 0) emitted += stream.push(ids[n - 1]);
      StreamDecoder copy = stream;
      EXPECT_EQ(emitted + copy.finish(), prefixes[n]) << s["name"] << " prefix " << n;
      EXPECT_EQ(prefixes[n].compare(0, emitted.size(), emitted), 0) << s["name"] << " " << n;
    }
    if (s.contains("decoded_skip")) {
      EXPECT_EQ(tok->decode(ids, true), s["decoded_skip"].get<std::string>()) << s["name"];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Real, GoldenTokenizer,
                         ::testing::Values("llama3", "llama3_1", "qwen3", "llama2", "gemma3",
                                           "deepseek_v3"));
// Small tokenizers of tests/data/text/synthetic/ for the options the real ones do not use.
INSTANTIATE_TEST_SUITE_P(Synthetic, GoldenTokenizer,
                         ::testing::Values("synthetic_bytelevel_flags", "synthetic_metaspace_first",
                                           "synthetic_metaspace_always_nosplit",
                                           "synthetic_digits_and_splits",
                                           "synthetic_prepend_unk_nodecoder",
                                           "synthetic_word_suffix"));

}  // namespace
}  // namespace qlinear::text
