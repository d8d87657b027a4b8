// The qlinear subcommands. Each lives in its own file and registers itself with one call from
// main.cc. A command never lets an exception or an abort out: its body returns a Status through
// run_command, and main maps it to the exit code (0 ok, 1 error, 2 usage error).
#pragma once

#include <functional>

#include "core/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace qlinear {

struct CommandContext {
  Status status;  // set by the subcommand that ran
};

// Runs `body` and stores its Status in `ctx`. Exceptions other than CLI11's usage errors
// (which propagate, so CLI11 reports them as usage errors) become kInternal errors.
void run_command(CommandContext& ctx, const std::function<Status()>& body);

void add_example_command(CLI::App& app, CommandContext& ctx);
void add_inspect_command(CLI::App& app, CommandContext& ctx);
void add_bench_command(CLI::App& app, CommandContext& ctx);
void add_explain_command(CLI::App& app, CommandContext& ctx);
void add_layer_command(CLI::App& app, CommandContext& ctx);
void add_generate_command(CLI::App& app, CommandContext& ctx);
void add_verify_command(CLI::App& app, CommandContext& ctx);
void add_bench_model_command(CLI::App& app, CommandContext& ctx);
void add_perplexity_command(CLI::App& app, CommandContext& ctx);
void add_tokenize_command(CLI::App& app, CommandContext& ctx);
void add_detokenize_command(CLI::App& app, CommandContext& ctx);
void add_chat_format_command(CLI::App& app, CommandContext& ctx);
void add_bench_tokenizer_command(CLI::App& app, CommandContext& ctx);
void add_quantize_command(CLI::App& app, CommandContext& ctx);

}  // namespace qlinear
