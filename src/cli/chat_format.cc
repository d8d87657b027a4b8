// `qlinear chat-format`: renders the model's chat template on a conversation and prints exactly
// the prompt (nothing added), as transformers' apply_chat_template(tokenize=False) would.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/json_text.h"
#include "text/tokenizer.h"

namespace qlinear {
namespace {

struct ChatFormatOptions {
  std::string model;
  std::string messages;
  std::string tools;
  bool no_generation_prompt = false;
};

Status run_chat_format(const ChatFormatOptions& o) {
  QL_ASSIGN_OR_RETURN(const std::string messages_text, io_internal::read_text_file(o.messages));
  nlohmann::ordered_json file;
  try {
    file = nlohmann::ordered_json::parse(messages_text);
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", o.messages, e.what());
  }
  // The file holds the list of messages, or an object with "messages" (and optionally "tools"
  // and further template variables, e.g. "enable_thinking").
  nlohmann::ordered_json messages = file;
  nlohmann::ordered_json tools = nullptr;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (file.is_object()) {
    if (!file.contains("messages")) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: expected a list of messages or an object with \"messages\"",
                        o.messages);
    }
    for (auto& [key, value] : file.items()) {
      if (key == "messages") {
        messages = value;
      } else if (key == "tools") {
        tools = value;
      } else {
        extra[key] = value;
      }
    }
  }
  if (!o.tools.empty()) {
    QL_ASSIGN_OR_RETURN(const std::string tools_text, io_internal::read_text_file(o.tools));
    try {
      tools = nlohmann::ordered_json::parse(tools_text);
    } catch (const nlohmann::json::exception& e) {
      return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", o.tools, e.what());
    }
  }
  QL_ASSIGN_OR_RETURN(const text::Tokenizer tok, text::Tokenizer::load(o.model));
  Result<std::string> prompt =
      tok.render_chat(messages.dump(), !o.no_generation_prompt,
                      tools.is_null() ? std::string() : tools.dump(), extra.dump());
  if (!prompt.ok()) return prompt.status().with_context(o.model);
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return Status::ok_status();
}

}  // namespace

void add_chat_format_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ChatFormatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat-format", "Print the prompt the model's chat template makes of a conversation");
  cmd->add_option("--model,-m", opts->model, "Model folder holding tokenizer_config.json")
      ->required();
  cmd->add_option("--messages", opts->messages,
                  "JSON file: [{\"role\": ..., \"content\": ...}, ...]")
      ->required();
  cmd->add_option("--tools", opts->tools, "JSON file with a list of tool definitions");
  cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt,
                "Render with add_generation_prompt = false");
  cmd->callback(
      [opts, &ctx] { run_command(ctx, [&]() -> Status { return run_chat_format(*opts); }); });
}

}  // namespace qlinear
