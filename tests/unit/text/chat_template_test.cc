// Real chat templates (Qwen3, Llama-3.1, Llama-3, Gemma-3, DeepSeek-V3) rendered through
// Tokenizer::render_chat against @huggingface/jinja's output on the same conversations
// (tests/data/text/chat_goldens.json, written by tools/text/make_chat_goldens.mjs).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "text_test_data.h"

namespace qlinear::text {
namespace {

using nlohmann::ordered_json;

ordered_json chat_goldens() {
  std::ifstream in(testing::golden_dir() + "/chat_goldens.json");
  return ordered_json::parse(in);
}

TEST(ChatTemplateGoldens, RealTemplatesMatchHuggingFaceJinja) {
  const ordered_json g = chat_goldens();
  std::map<std::string, ordered_json> conversations;
  for (const auto& c : g["conversations"]) conversations[c["name"].get<std::string>()] = c;
  int checked = 0;
  for (const auto& r : g["renders"]) {
    const std::string name = r["template"].get<std::string>();
    const Tokenizer* tok = testing::tokenizer(name);
    ASSERT_NE(tok, nullptr);
    const ordered_json& c = conversations.at(r["conversation"].get<std::string>());
    const std::string tools = c.contains("tools") ? c["tools"].dump() : std::string();
    Result<std::string> out =
        tok->render_chat(c["messages"].dump(), r["add_generation_prompt"].get<bool>(), tools);
    const std::string where = name + " / " + r["conversation"].get<std::string>() +
                              (r["add_generation_prompt"].get<bool>() ? " +gen" : " -gen");
    if (r.contains("error")) {
      ASSERT_FALSE(out.ok()) << where << " rendered:\n" << *out;
      EXPECT_NE(out.status().message().find(r["error"].get<std::string>()), std::string::npos)
          << where << ": " << out.status().message();
    } else {
      ASSERT_TRUE(out.ok()) << where << ": " << out.status().to_string();
      EXPECT_EQ(*out, r["output"].get<std::string>()) << where;
    }
    ++checked;
  }
  EXPECT_GE(checked, 80);
}

}  // namespace
}  // namespace qlinear::text
