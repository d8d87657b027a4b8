#include "cli/prompt_text.h"

#include <utility>

#include "text/tokenizer.h"

namespace qlinear {
namespace {

class TokenizerText final : public PromptText {
 public:
  explicit TokenizerText(text::Tokenizer tokenizer)
      : tokenizer_(std::move(tokenizer)),
        stream_(tokenizer_.stream_decoder(/*skip_special=*/true)) {}

  Result<std::vector<int32_t>> encode(const std::string& text) override {
    return tokenizer_.encode(text, /*add_special=*/true);
  }

  Result<std::vector<int32_t>> chat_prompt(const std::string& system,
                                           const std::string& user) override {
    if (!tokenizer_.has_chat_template()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--chat: the tokenizer has no chat template (tokenizer_config.json "
                        "\"chat_template\" or chat_template.jinja); use --prompt");
    }
    std::vector<text::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", user});
    QL_ASSIGN_OR_RETURN(const std::string prompt, tokenizer_.render_chat(messages, true));
    // The template writes the special tokens (BOS included) itself.
    return tokenizer_.encode(prompt, /*add_special=*/false);
  }

  std::string stream(int32_t id) override { return stream_.push(id); }
  std::string flush() override { return stream_.finish(); }

 private:
  text::Tokenizer tokenizer_;
  text::StreamDecoder stream_;
};

}  // namespace

Result<std::unique_ptr<PromptText>> PromptText::open(const std::string& dir) {
  QL_ASSIGN_OR_RETURN(text::Tokenizer tokenizer, text::Tokenizer::load(dir));
  return std::unique_ptr<PromptText>(std::make_unique<TokenizerText>(std::move(tokenizer)));
}

}  // namespace qlinear
