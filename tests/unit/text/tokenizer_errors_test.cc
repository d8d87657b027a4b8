// Every tokenizer.json component or option qlinear does not implement is a load error naming
// the JSON key and the value; so are files that contradict themselves. Nothing is approximated.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "text_test_data.h"

namespace qlinear::text {
namespace {

using nlohmann::json;

json base() {
  return testing::read_json(testing::golden_dir() + "/synthetic/word_suffix/tokenizer.json");
}

std::string load_error(const json& tokenizer, const json& config = json()) {
  Result<Tokenizer> t = Tokenizer::from_json(
      tokenizer.dump(), config.is_null() ? "" : config.dump(), "tokenizer.json");
  if (t.ok()) return "(loaded)";
  return t.status().message();
}

void expect_error(const json& tokenizer, const std::string& part, const json& config = json()) {
  const std::string message = load_error(tokenizer, config);
  EXPECT_NE(message.find(part), std::string::npos)
      << "error: " << message << "\nexpected: " << part;
}

TEST(TokenizerErrors, UnsupportedComponentTypesNameKeyAndValue) {
  json t = base();
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}},
                                     {{"type", "Punctuation"}, {"behavior", "Isolated"}}})}};
  expect_error(t,
               "tokenizer.json: pre_tokenizer.pretokenizers[1].type \"Punctuation\" is not "
               "supported (supported: ByteLevel, Split, Metaspace, Digits, Sequence)");
  t = base();
  t["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(t, "pre_tokenizer.type \"Whitespace\" is not supported");
  t = base();
  t["normalizer"] = {{"type", "BertNormalizer"}};
  expect_error(t, "normalizer.type \"BertNormalizer\" is not supported (supported: NFC, NFD, NFKC");
  t = base();
  t["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers", json::array({{{"type", "Precompiled"}, {"precompiled_charsmap", "AA=="}}})}};
  expect_error(t, "normalizer.normalizers[0].type \"Precompiled\" is not supported");
  t = base();
  t["model"]["type"] = "Unigram";
  expect_error(t, "model.type \"Unigram\" is not supported (supported: BPE)");
  t = base();
  t["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  expect_error(t,
               "decoder.type \"WordPiece\" is not supported (supported: ByteLevel, Metaspace, "
               "ByteFallback, Fuse, Strip, Replace, Sequence)");
  t = base();
  t["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Fuse"}}, {{"type", "CTC"}}})}};
  expect_error(t, "decoder.decoders[1].type \"CTC\" is not supported");
  t = base();
  t["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 1}}, {"cls", {"[CLS]", 2}}};
  expect_error(t,
               "post_processor.type \"BertProcessing\" is not supported (supported: "
               "TemplateProcessing, ByteLevel, Sequence)");
}

TEST(TokenizerErrors, UnimplementedOptionsAreErrors) {
  json t = base();
  t["model"]["dropout"] = 0.1;
  expect_error(t, "model.dropout 0.1 is not supported (BPE dropout is random; only null or 0 are)");
  t = base();
  t["truncation"] = {{"max_length", 512}};
  expect_error(t, "truncation {\"max_length\":512} is not supported");
  t = base();
  t["padding"] = {{"strategy", "BatchLongest"}};
  expect_error(t, "padding {\"strategy\":\"BatchLongest\"} is not supported");
  t = base();
  t["pre_tokenizer"]["frobnicate"] = true;
  expect_error(t,
               "pre_tokenizer.frobnicate \"frobnicate\" is not an option qlinear implements "
               "(known: type, pattern, behavior, invert)");
  t = base();
  t["pre_tokenizer"]["behavior"] = "Sideways";
  expect_error(t,
               "pre_tokenizer.behavior \"Sideways\" is not supported (supported: Removed, "
               "Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
  t = base();
  t["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}};
  expect_error(t,
               "pre_tokenizer.prepend_scheme \"sometimes\" is not supported (supported: always, "
               "first, never)");
  t = base();
  t["version"] = "2.0";
  expect_error(t, "version \"2.0\" is not supported");
  t = base();
  t["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}})},
                         {"pair", json::array()},
                         {"special_tokens", json::object()}};
  expect_error(t,
               "post_processor.single[0].Sequence.id \"B\": a single-sequence template must hold "
               "$A exactly once");
}

TEST(TokenizerErrors, RegexesPcre2WouldReadDifferentlyAreRejected) {
  json t = base();
  t["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "[a-z&&[^aeiou]]+"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  expect_error(t,
               "pre_tokenizer.pattern.Regex \"[a-z&&[^aeiou]]+\": character class "
               "intersection \"&&\" is not supported");
  t["pre_tokenizer"]["pattern"]["Regex"] = "[a-z[0-9]]";
  expect_error(t, "nested character classes are not supported");
  t["pre_tokenizer"]["pattern"]["Regex"] = "(?m:a.b)";
  expect_error(t, "the Ruby inline flag (?m) is not supported");
  t["pre_tokenizer"]["pattern"]["Regex"] = "(unclosed";
  expect_error(t, "pre_tokenizer.pattern.Regex \"(unclosed\": PCRE2 cannot compile it");
  t["pre_tokenizer"]["pattern"] = {{"String", ""}};
  expect_error(t, "pre_tokenizer.pattern.String \"\" (an empty pattern) is not supported");
}

TEST(TokenizerErrors, InconsistentFilesAreErrors) {
  json t = base();
  t["model"]["merges"].push_back(json::array({"q", "zz"}));
  expect_error(t, "model.merges[13] merge \"q zz\": token \"zz\" is not in the vocab");
  t = base();
  t["model"]["merges"] = json::array({"t h e"});
  expect_error(t, "model.merges[0] \"t h e\" must be two tokens separated by one space");
  t = base();
  t["model"]["unk_token"] = "<nope>";
  expect_error(t, "model.unk_token \"<nope>\" is not in the vocab");
  t = base();
  t["model"]["vocab"]["x"] = "seven";
  expect_error(t, "model.vocab.\"x\" must be an integer id");
  t = base();
  t["model"]["vocab"]["x"] = -1;
  expect_error(t, "model.vocab.\"x\" id -1 must be a non-negative 32-bit integer");
  t = base();
  t["model"]["merges"] = {{"a", "b"}};
  expect_error(t, "model.merges must be an array");
  t = base();
  t["model"]["merges"] = json::array({json::array({"t", "h", "e"})});
  expect_error(t, "model.merges[0] must be [\"a\", \"b\"], got 3 strings");
  t = base();
  t["added_tokens"][0].erase("content");
  expect_error(t, "added_tokens[0].content is missing");
  expect_error(base(), "tokenizer_config.json: bos_token \"<bos>\" is not in the vocabulary",
               json{{"bos_token", "<bos>"}, {"add_bos_token", true}});
  expect_error(base(), "chat_template line 1: unknown statement {% nope %}",
               json{{"chat_template", "{% nope %}"}});
  const std::string invalid = load_error(json());
  EXPECT_NE(invalid.find("must be an object"), std::string::npos) << invalid;
  Result<Tokenizer> broken = Tokenizer::from_json("{\"model\": ", "", "tokenizer.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("tokenizer.json: invalid JSON"), std::string::npos)
      << broken.status().message();
}

TEST(TokenizerErrors, MissingTokenizerJsonIsNotFound) {
  const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/empty_model";
  std::filesystem::create_directories(dir);
  Result<Tokenizer> t = Tokenizer::load(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(t.status().message().find(dir + "/tokenizer.json: not found"), std::string::npos)
      << t.status().message();
}

// The tokenizer's files go through the model folder's opening policy (io/model_files.h): a FIFO
// must not block the load, a link out of the folder must not be followed, and each file is
// named in the error with what it is.
TEST(TokenizerErrors, TokenizerFilesAreOpenedUnderTheModelFolderPolicy) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(QLINEAR_TEST_TMPDIR) / "policy_model";
  fs::create_directories(dir);
  const auto expect = [&](ErrorCode code, const std::string& name, const std::string& part) {
    Result<Tokenizer> t = Tokenizer::load(dir.string());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), code) << t.status().to_string();
    EXPECT_NE(t.status().message().find((dir / name).string()), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find(part), std::string::npos) << t.status().message();
  };
  ASSERT_EQ(::mkfifo((dir / "tokenizer.json").c_str(), 0600), 0);
  expect(ErrorCode::kRefusedFile, "tokenizer.json", "FIFO");
  fs::remove(dir / "tokenizer.json");
  fs::create_symlink("/etc/passwd", dir / "tokenizer.json");
  expect(ErrorCode::kRefusedFile, "tokenizer.json", "outside the model folder");
  fs::remove(dir / "tokenizer.json");
  fs::copy_file(testing::golden_dir() + "/synthetic/word_suffix/tokenizer.json",
                dir / "tokenizer.json");
  EXPECT_TRUE(Tokenizer::load(dir.string()).ok());
  fs::create_directories(dir / "chat_template.jinja");
  expect(ErrorCode::kRefusedFile, "chat_template.jinja", "is a directory");
  fs::remove(dir / "chat_template.jinja");
  fs::create_symlink("gone.json", dir / "tokenizer_config.json");
  expect(ErrorCode::kNotFound, "tokenizer_config.json", "dangling");
}

}  // namespace
}  // namespace qlinear::text
