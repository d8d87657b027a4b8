// `qlinear perplexity`: token-level perplexity of a text file with the runner (Hugging Face's
// sliding-window recipe, model/perplexity.h), with a progress bar per window and --json.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "cli/prompt_text.h"
#include "core/progress.h"
#include "io/json_text.h"
#include "model/decoder.h"
#include "model/perplexity.h"

namespace qlinear {
namespace {

struct PerplexityCliOptions {
  std::string model;
  std::string text;
  int64_t ctx = 1024;
  int64_t stride = 0;
  int64_t max_tokens = 0;
  DecoderFlags decoder;
  bool json = false;
};

Status run_perplexity(const PerplexityCliOptions& opts) {
  // The window rules before the (slow) load.
  QL_ASSIGN_OR_RETURN(const int64_t stride, perplexity_stride(opts.ctx, opts.stride));
  QL_ASSIGN_OR_RETURN(const std::string content,
                      io_internal::read_text_file(opts.text, kMaxTextInputBytes));
  QL_ASSIGN_OR_RETURN(std::unique_ptr<PromptText> text, PromptText::open(opts.model));
  QL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, text->encode(content));
  if (opts.max_tokens > 0 && static_cast<int64_t>(ids.size()) > opts.max_tokens) {
    ids.resize(static_cast<std::size_t>(opts.max_tokens));
  }

  QL_ASSIGN_OR_RETURN(Device device, device_from_flags(opts.decoder.device, ""));
  QL_ASSIGN_OR_RETURN(DecoderOptions dopts, decoder_options_from_flags(opts.decoder));
  dopts.ctx = opts.ctx;
  dopts.progress = !opts.json;
  QL_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, Decoder::load(opts.model, device, dopts));

  PerplexityOptions popts;
  popts.ctx = opts.ctx;
  popts.stride = stride;
  std::unique_ptr<Progress> bar;
  auto on_window = [&](int64_t done, int64_t total) {
    if (opts.json) return;
    if (!bar) bar = std::make_unique<Progress>("perplexity", static_cast<uint64_t>(total));
    bar->advance(1);
    if (done == total) bar->finish();
  };
  QL_ASSIGN_OR_RETURN(PerplexityResult r, perplexity(*decoder, ids, popts, on_window));
  const double tokens_per_s =
      static_cast<double>(r.windows) *
      static_cast<double>(std::min<int64_t>(r.ctx, static_cast<int64_t>(ids.size()))) / r.seconds;
  if (opts.json) {
    const nlohmann::json doc = {{"model", opts.model},
                                {"text", opts.text},
                                {"perplexity", r.perplexity},
                                {"nll", r.nll},
                                {"tokens", ids.size()},
                                {"scored", r.scored},
                                {"windows", r.windows},
                                {"ctx", r.ctx},
                                {"stride", r.stride},
                                {"seconds", r.seconds},
                                {"load_s", decoder->load_seconds()},
                                {"dtype", dtype_name(dopts.act_dtype)},
                                {"kv_dtype", dtype_name(dopts.kv_dtype)}};
    fmt::print("{}\n", doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("perplexity {:.4f} over {} tokens ({} scored, {} windows of {} tokens, stride {})\n",
               r.perplexity, ids.size(), r.scored, r.windows, r.ctx, r.stride);
    fmt::print(stderr, "qlinear: load {:.2f} s, {:.2f} s of forwards (about {:.0f} tok/s)\n",
               decoder->load_seconds(), r.seconds, tokens_per_s);
  }
  return Status::ok_status();
}

}  // namespace

void add_perplexity_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a text file (Hugging Face's sliding-window recipe)");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  cmd->add_option("--text", opts->text, "UTF-8 text file, tokenized as Hugging Face does")
      ->required();
  cmd->add_option("--ctx", opts->ctx, "Window length in tokens")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--stride", opts->stride, "Tokens between window starts (default ctx / 2)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-tokens", opts->max_tokens, "Score only the text's first N tokens")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 40));
  add_decoder_flags(cmd, &opts->decoder);
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_perplexity(*opts); }); });
}

}  // namespace qlinear
