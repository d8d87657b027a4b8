// `qlinear bench-model`: a whole decoder's prefill and decode speed, bytes read per decoded token
// and the ratio to the read bandwidth measured in the same run (bench/bench_model.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "bench/bench_model.h"
#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "core/memory.h"

namespace qlinear {
namespace {

struct BenchModelCliOptions {
  bench::ModelBenchOptions bench;
  // bf16 activations and KV cache by default: what a user runs for speed.
  DecoderFlags decoder = [] {
    DecoderFlags flags;
    flags.dtype = "bf16";
    flags.kv_dtype = "bf16";
    return flags;
  }();
  bool json = false;
};

Status run_bench_model(BenchModelCliOptions& opts) {
  opts.bench.device = opts.decoder.device;
  QL_ASSIGN_OR_RETURN(opts.bench.decoder, decoder_options_from_flags(opts.decoder));
  opts.bench.decoder.progress = !opts.json;
  QL_ASSIGN_OR_RETURN(bench::ModelBenchResult r, bench::run_model_bench(opts.bench));
  if (opts.json) {
    fmt::print("{}\n", bench::model_result_json(r));
    return Status::ok_status();
  }
  fmt::print("{} {}: load {:.1f} s, prefill {:.1f} tok/s ({} tokens), decode {:.2f} tok/s\n",
             r.model, r.format, r.load_s, r.prefill_tokens_per_s, opts.bench.prompt_len,
             r.decode_tokens_per_s);
  if (r.batch > 1) {
    fmt::print("  batch of {} sequences: {:.2f} tok/s per sequence, {:.1f} tok/s in total\n",
               r.batch, r.decode_tokens_per_s, r.total_tokens_per_s);
  }
  if (r.membw_gbps > 0.0) {
    fmt::print(
        "  {:.1f} MB read per decoded token, {:.1f} GB/s = {:.2f} x the {:.1f} GB/s read "
        "bandwidth measured around the decode\n",
        r.bytes_per_token / 1e6, r.bytes_per_token * r.decode_tokens_per_s / 1e9, r.ratio_membw,
        r.membw_gbps);
  } else {
    fmt::print("  {:.1f} MB read per decoded token, {:.1f} GB/s (no bandwidth yardstick on {})\n",
               r.bytes_per_token / 1e6, r.bytes_per_token * r.decode_tokens_per_s / 1e9,
               opts.decoder.device);
  }
  fmt::print("  decode step: {}; peak RSS {} MiB\n", r.decode_step,
             peak_resident_bytes() / (1 << 20));
  if (!plain_greedy(r.sampling)) {
    fmt::print("  sampled: temperature {}, top-k {}, top-p {}, min-p {}, repetition penalty {}\n",
               r.sampling.temperature, r.sampling.top_k, r.sampling.top_p, r.sampling.min_p,
               r.sampling.repetition_penalty);
    fmt::print("  sampled on: {}\n", r.sampled_where);
  }
  for (const std::string& k : r.kernels) fmt::print("  {}\n", k);
  return Status::ok_status();
}

}  // namespace

void add_bench_model_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<BenchModelCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-model", "Prefill and decode speed of a whole model against the memory bandwidth");
  cmd->add_option("--model,-m", opts->bench.model_dir, "A checkpoint folder");
  cmd->add_option("--synthetic", opts->bench.synthetic,
                  "Random weights of a real shape: llama3-8b, llama3.2-1b, qwen2.5-7b, "
                  "llama2-7b, synth-1b");
  cmd->add_option("--format", opts->bench.format,
                  "Synthetic weights: w4a16g128, w8a16, fp8-block, fp8-channel, bf16")
      ->capture_default_str();
  cmd->add_option("--prompt-len", opts->bench.prompt_len, "Prompt tokens (prefill)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  cmd->add_option("--gen-len", opts->bench.gen_len, "Tokens decoded")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  cmd->add_option("--batch", opts->bench.batch,
                  "Sequences decoded together (static batching: each its own prompt and KV "
                  "cache, every decode step at M = batch); tok/s per sequence and in total")
      ->check(CLI::Range(int64_t{1}, int64_t{256}))
      ->capture_default_str();
  DecoderFlagSet flag_set;
  flag_set.quantization = false;  // synthetic weights, or a folder as it is
  add_decoder_flags(cmd, &opts->decoder, flag_set);
  cmd->add_option("--seed", opts->bench.seed, "Seed of the synthetic weights and prompt");
  SamplingOptions& s = opts->bench.sampling;
  cmd->add_option("--temperature", s.temperature,
                  "Decode by sampling at this temperature (0: greedy)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "Sample among the k most likely (0: off)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", s.top_p, "Nucleus sampling mass (0, 1]")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", s.min_p, "Drop tokens under min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repetition-penalty", s.repetition_penalty, "> 1 discourages repeats")
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_bench_model(*opts); }); });
}

}  // namespace qlinear
