// `qlinear quantize`: a float checkpoint folder quantized into one of the formats real tools
// write (src/quantize, docs/quantize.md); a per-layer table or a --json summary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "quantize/quantize.h"

namespace qlinear {
namespace {

struct QuantizeCliOptions {
  std::string model;
  std::string out;
  std::string format;
  int bits = 0;
  int group = 0;
  bool sym = false;
  bool asym = false;
  bool act_order = false;
  std::vector<std::string> ignore;
  std::string calib;
  int64_t calib_tokens = 4096;
  bool force = false;
  int threads = 0;
  bool json = false;
};

nlohmann::ordered_json report_json(const quantize::QuantizeReport& r) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const quantize::LayerReport& l : r.layers) {
    nlohmann::ordered_json j = {{"name", l.name},
                                {"N", l.N},
                                {"K", l.K},
                                {"algorithm", l.algorithm},
                                {"weight_error", l.weight_error},
                                {"seconds", l.seconds}};
    if (l.output_error >= 0) j["output_error"] = l.output_error;
    if (l.awq_alpha >= 0) j["awq_alpha"] = l.awq_alpha;
    layers.push_back(std::move(j));
  }
  return {{"format", r.format},
          {"out", r.out_dir},
          {"bits", r.bits},
          {"group_size", r.group_size},
          {"sym", r.sym},
          {"act_order", r.act_order},
          {"calib_tokens", r.calib_tokens},
          {"calib_seconds", r.calib_seconds},
          {"seconds", r.seconds},
          {"bytes_in", r.bytes_in},
          {"bytes_written", r.bytes_written},
          {"files", r.files},
          {"notes", r.notes},
          {"layers", layers}};
}

void print_report(const quantize::QuantizeReport& r) {
  for (const std::string& n : r.notes) fmt::print("note: {}\n", n);
  fmt::print("{:<40} {:>6} {:>6} {:<16} {:>10} {:>10}\n", "layer", "N", "K", "algorithm",
             "weight err", "output err");
  double worst = 0.0;
  for (const quantize::LayerReport& l : r.layers) {
    const std::string out = l.output_error >= 0 ? fmt::format("{:.5f}", l.output_error) : "-";
    fmt::print("{:<40} {:>6} {:>6} {:<16} {:>10.5f} {:>10}\n", l.name, l.N, l.K, l.algorithm,
               l.weight_error, out);
    worst = std::max(worst, l.weight_error);
  }
  fmt::print("{}: {} layers, {} bits, {:.1f} MB -> {:.1f} MB in {:.1f} s", r.format,
             r.layers.size(), r.bits, static_cast<double>(r.bytes_in) / 1e6,
             static_cast<double>(r.bytes_written) / 1e6, r.seconds);
  if (r.calib_tokens > 0) {
    fmt::print(" (calibration: {} tokens, {:.1f} s)", r.calib_tokens, r.calib_seconds);
  }
  fmt::print("; worst relative weight error {:.5f}\nwrote {}\n", worst, r.out_dir);
}

Status run_quantize(const QuantizeCliOptions& opts) {
  const auto format = quantize::output_format_from_name(opts.format);
  if (!format) {
    return make_error(ErrorCode::kInvalidArgument, "--format {}: unknown; one of {}", opts.format,
                      quantize::output_format_names());
  }
  if (opts.sym && opts.asym) {
    return make_error(ErrorCode::kInvalidArgument, "--sym and --asym: give at most one");
  }
  quantize::QuantizeOptions o;
  o.model_dir = opts.model;
  o.out_dir = opts.out;
  o.format = *format;
  o.bits = opts.bits;
  o.group_size = opts.group;
  if (opts.sym) o.sym = true;
  if (opts.asym) o.sym = false;
  o.act_order = opts.act_order;
  o.ignore = opts.ignore;
  o.calib_file = opts.calib;
  o.calib_tokens = opts.calib_tokens;
  o.force = opts.force;
  o.threads = opts.threads;
  o.progress = !opts.json;
  QL_ASSIGN_OR_RETURN(const quantize::QuantizeReport report, quantize::quantize_checkpoint(o));
  if (opts.json) {
    fmt::print("{}\n", report_json(report).dump(2));
  } else {
    print_report(report);
  }
  return Status::ok_status();
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize a float checkpoint into AWQ, GPTQ, AutoRound, compressed-tensors or FP8");
  cmd->add_option("--model,-m", opts->model, "Float (bf16/f16/f32) checkpoint folder")->required();
  cmd->add_option("--out,-o", opts->out, "Output folder (new or empty; see --force)")->required();
  cmd->add_option("--format,-f", opts->format, quantize::output_format_names())->required();
  cmd->add_option("--bits", opts->bits, "4 or 8 (default: the format's)");
  cmd->add_option("--group", opts->group, "Group size 32, 64, 128 (default) or -1 (channelwise)");
  cmd->add_flag("--sym", opts->sym, "Symmetric integer grid");
  cmd->add_flag("--asym", opts->asym, "Asymmetric integer grid (zero points)");
  cmd->add_flag("--act-order", opts->act_order,
                "GPTQ: quantize columns by decreasing Hessian diagonal (needs --calib)");
  cmd->add_option("--ignore", opts->ignore,
                  "Keep layers whose name matches this regex unquantized (repeatable)");
  cmd->add_option("--calib", opts->calib,
                  "Calibration text: GPTQ / AWQ / FP8 static scales from the model's activations");
  cmd->add_option("--calib-tokens", opts->calib_tokens, "Calibration tokens (default 4096)");
  cmd->add_flag("--force", opts->force, "Replace the checkpoint files of a non-empty --out");
  cmd->add_option("--threads", opts->threads, "CPU threads of the calibration run (0: all)");
  cmd->add_flag("--json", opts->json, "Print a JSON summary (layers, bytes, time, errors)");
  cmd->callback(
      [opts, &ctx] { run_command(ctx, [&]() -> Status { return run_quantize(*opts); }); });
}

}  // namespace qlinear
