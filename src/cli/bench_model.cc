// `qlinear bench-model`: a whole decoder's prefill and decode speed, bytes read per decoded token
// and the ratio to the read bandwidth measured in the same run (bench/bench_model.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "bench/bench_model.h"
#include "cli/commands.h"
#include "cli/kernel_flags.h"

namespace qlinear {
namespace {

struct BenchModelCliOptions {
  bench::ModelBenchOptions bench;
  std::string backend = "auto";
  std::string kernel;
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  std::string device = "cpu";
  bool json = false;
};

Status run_bench_model(BenchModelCliOptions& opts) {
  opts.bench.device = opts.device;
  QL_ASSIGN_OR_RETURN(opts.bench.decoder.policy,
                      policy_from_flags(opts.backend, opts.kernel, false));
  opts.bench.decoder.act_dtype = opts.dtype == "f32" ? DType::kF32 : DType::kBF16;
  opts.bench.decoder.kv_dtype = opts.kv_dtype == "f32" ? DType::kF32 : DType::kBF16;
  opts.bench.decoder.progress = !opts.json;
  QL_ASSIGN_OR_RETURN(bench::ModelBenchResult r, bench::run_model_bench(opts.bench));
  if (opts.json) {
    fmt::print("{}\n", bench::model_result_json(r));
    return Status::ok_status();
  }
  fmt::print("{} {}: load {:.1f} s, prefill {:.1f} tok/s ({} tokens), decode {:.2f} tok/s\n",
             r.model, r.format, r.load_s, r.prefill_tokens_per_s, opts.bench.prompt_len,
             r.decode_tokens_per_s);
  if (r.membw_gbps > 0.0) {
    fmt::print(
        "  {:.1f} MB read per decoded token, {:.1f} GB/s = {:.2f} x the {:.1f} GB/s read "
        "bandwidth measured around the decode\n",
        r.bytes_per_token / 1e6, r.bytes_per_token * r.decode_tokens_per_s / 1e9, r.ratio_membw,
        r.membw_gbps);
  } else {
    fmt::print("  {:.1f} MB read per decoded token, {:.1f} GB/s (no bandwidth yardstick on {})\n",
               r.bytes_per_token / 1e6, r.bytes_per_token * r.decode_tokens_per_s / 1e9,
               opts.device);
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
  cmd->add_option("--threads", opts->bench.decoder.threads, "CPU threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--tp", opts->bench.decoder.tp, "Tensor-parallel ranks, emulated")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--dtype", opts->dtype, "Activations of the linear layers: bf16 or f32")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--kv-dtype", opts->kv_dtype, "KV cache: bf16 or f32")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--device", opts->device, "cpu, cuda[:N], opencl[:N] or xpu")
      ->capture_default_str();
  cmd->add_option("--linear-backend", opts->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--kernel", opts->kernel, "Only this kernel may run");
  cmd->add_option("--seed", opts->bench.seed, "Seed of the synthetic weights and prompt");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_bench_model(*opts); }); });
}

}  // namespace qlinear
