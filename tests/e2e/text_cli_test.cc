// The tokenizer commands of the `qlinear` binary, run as a user would, on the real Hugging Face
// tokenizer files (fetched by the text_fetch_tokenizers fixture): outputs are compared with
// Hugging Face's own tokenizer and @huggingface/jinja (the committed goldens), and every error
// case must exit non-zero naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace qlinear {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const std::string kGoldens = std::string(QLINEAR_SOURCE_DIR) + "/tests/data/text";

std::string model_dir(const std::string& name) {
  const std::string dir = std::string(QLINEAR_TEXT_TEST_DATA) + "/" + name;
  EXPECT_TRUE(std::filesystem::exists(dir + "/tokenizer.json"))
      << dir << " is missing: the text_fetch_tokenizers test fetches it (bash "
      << "scripts/fetch_test_tokenizers.sh " << QLINEAR_TEXT_TEST_DATA << ")";
  return dir;
}

e2e::CliRun run(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string dir = e2e::fresh_dir("text_cli", std::to_string(counter++));
  std::filesystem::create_directories(dir);
  return e2e::run_cli(args, dir);
}

json golden_case(const std::string& tokenizer, const std::string& name) {
  std::ifstream in(kGoldens + "/goldens/" + tokenizer + ".json");
  const json goldens = json::parse(in);
  for (const json& c : goldens["cases"]) {
    if (c["name"] == name) return c;
  }
  ADD_FAILURE() << name << " not in the " << tokenizer << " goldens";
  return json();
}

std::string golden_text(const std::string& name) {
  std::ifstream in(kGoldens + "/golden_strings.json");
  const json strings = json::parse(in);
  for (const json& c : strings["strings"]) {
    if (c["name"] == name) return c["text"].get<std::string>();
  }
  return "";
}

std::string write_file(const std::string& name, const std::string& content) {
  const std::string dir = e2e::fresh_dir("text_cli_files", name);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(TextCli, TokenizeJsonMatchesHuggingFace) {
  for (const auto& [tokenizer, name] :
       std::vector<std::pair<std::string, std::string>>{{"qwen3", "special_2"},
                                                        {"qwen3", "code_3"},
                                                        {"llama3", "code_0"},
                                                        {"llama2", "cjk_0"},
                                                        {"gemma3", "english_15"},
                                                        {"gemma3", "emoji_2"}}) {
    SCOPED_TRACE(tokenizer + " " + name);
    const json g = golden_case(tokenizer, name);
    const e2e::CliRun r =
        run({"tokenize", "--model", model_dir(tokenizer), "--text", golden_text(name), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["ids"], g["ids"]);
    EXPECT_EQ(out["tokens"].size(), out["ids"].size());
    if (g.contains("tokens")) {  // the goldens store tokens for their first 80 strings
      EXPECT_EQ(out["tokens"], g["tokens"]);
    }
  }
}

TEST(TextCli, TokenizePrintsIdsAndNoSpecialDropsBos) {
  const json g = golden_case("llama2", "english_1");
  e2e::CliRun r = run({"tokenize", "-m", model_dir("llama2"), "-t", golden_text("english_1")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string want;
  for (const json& id : g["ids"]) want += (want.empty() ? "" : ",") + std::to_string(id.get<int>());
  EXPECT_EQ(r.out, want + "\n");
  r = run({"tokenize", "-m", model_dir("llama2"), "-t", golden_text("english_1"), "--no-special",
           "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], g["ids_plain"]);
  const std::string file = write_file("input.txt", golden_text("english_1"));
  r = run({"tokenize", "-m", model_dir("llama2"), "--text-file", file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], g["ids"]);
}

TEST(TextCli, DetokenizePrintsExactlyTheDecodedText) {
  const json g = golden_case("llama2", "special_5");
  std::string ids;
  for (const json& id : g["ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  e2e::CliRun r = run({"detokenize", "--model", model_dir("llama2"), "--ids", ids});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, g["decoded"].get<std::string>());
  r = run({"detokenize", "--model", model_dir("llama2"), "--ids", ids, "--skip-special"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, g["decoded_skip"].get<std::string>());
}

TEST(TextCli, ChatFormatMatchesHuggingFaceJinja) {
  std::ifstream in(kGoldens + "/chat_goldens.json");
  const ordered_json g = ordered_json::parse(in);
  ordered_json conversation;
  for (const auto& c : g["conversations"]) {
    if (c["name"] == "system_multi_turn") conversation = c;
  }
  const std::string messages = write_file("messages.json", conversation["messages"].dump());
  for (const auto& r : g["renders"]) {
    if (r["conversation"] != "system_multi_turn") continue;
    const std::string name = r["template"].get<std::string>();
    const bool gen = r["add_generation_prompt"].get<bool>();
    SCOPED_TRACE(name + (gen ? " +gen" : " -gen"));
    std::vector<std::string> args = {"chat-format", "--model", model_dir(name), "--messages",
                                     messages};
    if (!gen) args.push_back("--no-generation-prompt");
    const e2e::CliRun out = run(args);
    ASSERT_EQ(out.exit_code, 0) << out.err;
    EXPECT_EQ(out.out, r["output"].get<std::string>());
  }
}

TEST(TextCli, ChatFormatTakesToolsFromTheMessagesFile) {
  std::ifstream in(kGoldens + "/chat_goldens.json");
  const ordered_json g = ordered_json::parse(in);
  ordered_json conversation;
  for (const auto& c : g["conversations"]) {
    if (c["name"] == "tools_and_tool_calls") conversation = c;
  }
  const std::string file = write_file("with_tools.json", conversation.dump());
  const e2e::CliRun out = run({"chat-format", "-m", model_dir("qwen3"), "--messages", file});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  for (const auto& r : g["renders"]) {
    if (r["conversation"] == "tools_and_tool_calls" && r["template"] == "qwen3" &&
        r["add_generation_prompt"] == true) {
      EXPECT_EQ(out.out, r["output"].get<std::string>());
    }
  }
}

TEST(TextCli, ErrorsExitNonZeroAndNameTheProblem) {
  const std::string empty = e2e::fresh_dir("text_cli_models", "empty");
  std::filesystem::create_directories(empty);
  e2e::CliRun r = run({"tokenize", "--model", empty, "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tokenizer.json: not found"), std::string::npos) << r.err;

  r = run({"detokenize", "--model", model_dir("llama3"), "--ids", "1,two,3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--ids: \"two\" is not an integer"), std::string::npos) << r.err;
  r = run({"detokenize", "--model", model_dir("llama3"), "--ids", "5,99999999"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--ids: 99999999 is not a token id of this tokenizer"), std::string::npos)
      << r.err;

  const std::string bad = e2e::fresh_dir("text_cli_models", "punctuation");
  std::filesystem::create_directories(bad);
  {
    std::ifstream src(kGoldens + "/synthetic/word_suffix/tokenizer.json");
    json t = json::parse(src);
    t["pre_tokenizer"] = {{"type", "Punctuation"}, {"behavior", "Isolated"}};
    std::ofstream(bad + "/tokenizer.json") << t.dump();
  }
  r = run({"tokenize", "--model", bad, "--text", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pre_tokenizer.type \"Punctuation\" is not supported (supported: "
                       "ByteLevel, Split, Metaspace, Digits, Sequence)"),
            std::string::npos)
      << r.err;

  const std::string messages = write_file("m.json", R"([{"role": "user", "content": "hi"}])");
  r = run({"chat-format", "--model", model_dir("llama2"), "--messages", messages});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no chat template"), std::string::npos) << r.err;
  const std::string broken = write_file("broken.json", "[{\"role\": ");
  r = run({"chat-format", "--model", model_dir("qwen3"), "--messages", broken});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("invalid JSON"), std::string::npos) << r.err;
  const std::string two_users = write_file(
      "users.json", R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  r = run({"chat-format", "--model", model_dir("gemma3"), "--messages", two_users});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the template raised an error: Conversation roles must alternate"),
            std::string::npos)
      << r.err;

  r = run({"tokenize", "--model", model_dir("qwen3")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--text"), std::string::npos) << r.err;
}

TEST(TextCli, BenchTokenizerReportsThroughput) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += golden_text("english_3") + "\n" + golden_text("cjk_2") + "\n";
  const std::string file = write_file("corpus.txt", text);
  const e2e::CliRun r = run({"bench-tokenizer", "--model", model_dir("qwen3"), "--text", file,
                             "--repeat", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["bytes"].get<size_t>(), text.size());
  EXPECT_EQ(out["decoded_bytes"].get<size_t>(), text.size());  // byte-level: decode(encode(t)) == t
  EXPECT_GT(out["encode_mb_s"].get<double>(), 0.0);
  EXPECT_GT(out["tokens"].get<size_t>(), 1000u);
}

}  // namespace
}  // namespace qlinear
