// `qlinear detokenize`: the text of a list of token ids, printed exactly (no newline added).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "text/tokenizer.h"

namespace qlinear {
namespace {

struct DetokenizeOptions {
  std::string model;
  std::string ids;
  bool skip_special = false;
};

// "1,2, 3" or "1 2 3" -> ids; every id must name a token.
Result<std::vector<int32_t>> parse_ids(const std::string& list, const text::Tokenizer& tok) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < list.size()) {
    if (list[i] == ',' || list[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < list.size() && list[end] != ',' && list[end] != ' ') ++end;
    const std::string item = list.substr(i, end - i);
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || ptr != item.data() + item.size()) {
      return make_error(ErrorCode::kInvalidArgument, "--ids: \"{}\" is not an integer", item);
    }
    if (value < 0 || value >= tok.vocab_size() || !tok.id_to_token(static_cast<int32_t>(value))) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--ids: {} is not a token id of this tokenizer (ids are 0..{})", value,
                        tok.vocab_size() - 1);
    }
    ids.push_back(static_cast<int32_t>(value));
    i = end;
  }
  return ids;
}

Status run_detokenize(const DetokenizeOptions& o) {
  QL_ASSIGN_OR_RETURN(const text::Tokenizer tok, text::Tokenizer::load(o.model));
  QL_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, parse_ids(o.ids, tok));
  const std::string out = tok.decode(ids, o.skip_special);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::ok_status();
}

}  // namespace

void add_detokenize_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<DetokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("detokenize", "Print the text of token ids, exactly");
  cmd->add_option("--model,-m", opts->model, "Model folder holding tokenizer.json")->required();
  cmd->add_option("--ids", opts->ids, "Token ids, e.g. 1,22557,1526")->required();
  cmd->add_flag("--skip-special", opts->skip_special, "Leave out special tokens");
  cmd->callback(
      [opts, &ctx] { run_command(ctx, [&]() -> Status { return run_detokenize(*opts); }); });
}

}  // namespace qlinear
