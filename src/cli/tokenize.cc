// `qlinear tokenize`: the ids (and with --json the token strings) of a text, from a model
// folder's tokenizer.json / tokenizer_config.json alone.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/json_text.h"
#include "text/tokenizer.h"

namespace qlinear {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string text_file;
  bool no_special = false;
  bool json = false;
};

Status run_tokenize(const TokenizeOptions& o) {
  QL_ASSIGN_OR_RETURN(const text::Tokenizer tok, text::Tokenizer::load(o.model));
  std::string input = o.text;
  if (!o.text_file.empty()) {
    QL_ASSIGN_OR_RETURN(input, io_internal::read_text_file(o.text_file, kMaxTextInputBytes));
  }
  QL_ASSIGN_OR_RETURN(const text::Encoding e, tok.encode_with_tokens(input, !o.no_special));
  if (o.json) {
    const nlohmann::json out = {{"ids", e.ids}, {"tokens", e.tokens}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}\n", fmt::join(e.ids, ","));
  }
  return Status::ok_status();
}

}  // namespace

void add_tokenize_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Print the token ids of a text (only the folder's tokenizer files are read)");
  cmd->add_option("--model,-m", opts->model, "Model folder holding tokenizer.json")->required();
  auto* text = cmd->add_option("--text,-t", opts->text, "The text");
  auto* file = cmd->add_option("--text-file", opts->text_file, "Read the text from this file");
  text->excludes(file);
  cmd->add_flag("--no-special", opts->no_special,
                "Do not add the special tokens the tokenizer adds (BOS/EOS); special tokens "
                "written in the text are still recognized");
  cmd->add_flag("--json", opts->json, "Print {\"ids\": [...], \"tokens\": [...]}");
  cmd->callback([opts, text, file, &ctx] {
    if (text->count() == 0 && file->count() == 0) {
      throw CLI::RequiredError("--text or --text-file");
    }
    run_command(ctx, [&]() -> Status { return run_tokenize(*opts); });
  });
}

}  // namespace qlinear
