// qlinear: the command-line entry point. Registers every subcommand and maps the outcome to the
// exit code: 0 ok, 1 an error in the input (printed as "qlinear: error: ..."), 2 a usage error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "core/escape.h"
#include "qlinear/version.h"

int main(int argc, char** argv) {
  CLI::App app{"qlinear: quantized LLM checkpoints through one canonical weight form"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("qlinear ") + qlinear::version_string());

  qlinear::CommandContext ctx;
  qlinear::add_example_command(app, ctx);
  qlinear::add_inspect_command(app, ctx);
  qlinear::add_bench_command(app, ctx);
  qlinear::add_explain_command(app, ctx);
  qlinear::add_layer_command(app, ctx);
  qlinear::add_generate_command(app, ctx);
  qlinear::add_verify_command(app, ctx);
  qlinear::add_bench_model_command(app, ctx);
  qlinear::add_perplexity_command(app, ctx);
  qlinear::add_tokenize_command(app, ctx);
  qlinear::add_detokenize_command(app, ctx);
  qlinear::add_chat_format_command(app, ctx);
  qlinear::add_bench_tokenizer_command(app, ctx);
  qlinear::add_quantize_command(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const CLI::Error& e) {
    fmt::print(stderr, "qlinear: error: {}\n", qlinear::escape_message(e.what()));
    return 2;
  }
  if (!ctx.status.ok()) {
    // Messages quote names and values from the input: escaped, they cannot drive the terminal.
    fmt::print(stderr, "qlinear: error: {}\n", qlinear::escape_message(ctx.status.message()));
    return 1;
  }
  return 0;
}
