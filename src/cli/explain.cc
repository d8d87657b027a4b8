// `qlinear explain`: for every linear layer (fused layers once), the kernel selection would pick
// on a detected or simulated device, the FP8 mode and why, and why every other candidate was
// not used. The text form groups layers whose reasons are identical, so a 32-layer model reads as
// a few blocks, not 200.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "cli/option_checks.h"
#include "io/checkpoint.h"
#include "kernels/explain.h"

namespace qlinear {
namespace {

struct ExplainCliOptions {
  std::string model;
  std::string device = "cpu";
  std::string target;
  std::string backend = "auto";
  std::string kernel;
  bool int8_activations = false;
  int tp = 1;
  std::string quantization;
  std::string act_dtype = "bf16";
  std::string out_dtype = "f32";
  int64_t max_rows = 4096;
  bool json = false;
};

DType dtype_flag(const std::string& name) {
  return name == "f32" ? DType::kF32 : name == "f16" ? DType::kF16 : DType::kBF16;
}

// "M1-255" or "M256+" of a bucket.
std::string m_range(int64_t lo, int64_t hi) { return fmt::format("M{}-{}", lo, hi); }

// The kernels of a row's buckets, each once, in order: "a", or "a / b" when M switches kernels.
std::string kernels_text(const ExplainRow& row) {
  std::vector<std::string> names;
  for (const ExplainBucket& b : row.buckets) {
    const std::string name = b.kernel.empty() ? "(none)" : b.kernel;
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  return names.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(names, " / "));
}

// "M1-255 cpu.w4a16.avx512 [inline], M256-4096 cpu.w4a16.avx512 [panel]", or "" for one bucket.
std::string buckets_text(const ExplainRow& row) {
  if (row.buckets.size() < 2) return "";
  std::vector<std::string> parts;
  for (const ExplainBucket& b : row.buckets) {
    parts.push_back(fmt::format("{} {}{}", m_range(b.m_min, b.m_max),
                                b.kernel.empty() ? "(none)" : b.kernel,
                                b.engine.empty() ? "" : fmt::format(" [{}]", b.engine)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "0,1" / "0-31" / "0-3,7": consecutive runs of three or more become ranges.
std::string index_ranges(std::vector<long> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(fmt::format("{}-{}", indices[i], indices[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(indices[k]));
    }
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

// Layer names with their decoder index folded: "model.layers.{0-31}.mlp.down_proj".
std::vector<std::string> fold_layer_names(const std::vector<std::string>& names) {
  static const std::regex kIndexed(R"(^(.*\.layers\.)(\d+)(\..*)$)");
  std::vector<std::pair<std::string, std::string>> order;  // (prefix, suffix) or (name, "")
  std::map<std::pair<std::string, std::string>, std::vector<long>> indices;
  for (const std::string& name : names) {
    std::smatch m;
    std::pair<std::string, std::string> key{name, ""};
    long index = -1;
    if (std::regex_match(name, m, kIndexed)) {
      key = {m[1].str(), m[3].str()};
      index = std::strtol(m[2].str().c_str(), nullptr, 10);
    }
    if (!indices.contains(key)) order.push_back(key);
    if (index >= 0)
      indices[key].push_back(index);
    else
      indices[key];
  }
  std::vector<std::string> folded;
  for (const auto& key : order) {
    const std::vector<long>& idx = indices[key];
    if (idx.empty()) {
      folded.push_back(key.first);
    } else if (idx.size() == 1) {
      folded.push_back(fmt::format("{}{}{}", key.first, idx.front(), key.second));
    } else {
      folded.push_back(fmt::format("{}{{{}}}{}", key.first, index_ranges(idx), key.second));
    }
  }
  return folded;
}

// Model order for reading: decoder index, attention before MLP, other layers (lm_head) last.
std::pair<long, int> model_order(const std::string& name) {
  static const std::regex kIndexed(R"(^.*\.layers\.(\d+)\..*$)");
  std::smatch m;
  const long index =
      std::regex_match(name, m, kIndexed) ? std::strtol(m[1].str().c_str(), nullptr, 10) : LONG_MAX;
  const char* kinds[] = {"qkv_proj",     "q_proj",    "k_proj",  "v_proj",   "o_proj",
                         "gate_up_proj", "gate_proj", "up_proj", "down_proj"};
  for (int i = 0; i < static_cast<int>(std::size(kinds)); ++i) {
    if (name.ends_with(kinds[i])) return {index, i};
  }
  return {index, static_cast<int>(std::size(kinds))};
}

void print_table(const ExplainReport& report) {
  const std::string headers[] = {"LAYER", "SCHEME", "KERNEL", "MODE"};
  size_t widths[] = {headers[0].size(), headers[1].size(), headers[2].size()};
  const auto kernel_text = [](const ExplainRow& row) { return kernels_text(row); };
  for (const ExplainRow& row : report.layers) {
    widths[0] = std::max(widths[0], row.name.size());
    widths[1] = std::max(widths[1], row.scheme.size());
    widths[2] = std::max(widths[2], kernel_text(row).size());
  }
  fmt::print("device: {}\n\n", report.device);
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", headers[0], widths[0], headers[1], widths[1],
             headers[2], widths[2], headers[3]);
  for (const ExplainRow& row : report.layers) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", row.name, widths[0], row.scheme, widths[1],
               kernel_text(row), widths[2], row.mode == "none" ? "-" : row.mode);
  }
}

// Layers with the same buckets, modes, reasons, runners-up and errors share one block of details.
using SelectionKey = std::tuple<int64_t, int64_t, std::string, std::string,
                                std::vector<std::pair<std::string, std::string>>,
                                std::vector<std::string>, std::string>;
using DetailKey = std::tuple<std::string, std::string, std::vector<SelectionKey>>;

DetailKey detail_key(const ExplainRow& row) {
  std::vector<SelectionKey> selections;
  for (const ExplainSelection& e : row.selections) {
    std::vector<std::pair<std::string, std::string>> rejected;
    for (const ExplainRejection& r : e.rejected) rejected.emplace_back(r.kernel, r.reason);
    selections.emplace_back(e.m_min, e.m_max, e.mode, e.mode_reason, std::move(rejected),
                            e.also_accepted, e.error);
  }
  return {row.note, buckets_text(row), std::move(selections)};
}

void print_selection(const ExplainSelection& e, std::string_view indent) {
  if (!e.mode_reason.empty()) fmt::print("{}{}: {}\n", indent, e.mode_label, e.mode_reason);
  if (!e.error.empty()) {
    // The no-kernel error already lists every candidate with its reason and remedy.
    fmt::print("{}error: {}\n", indent, e.error);
    return;
  }
  if (!e.also_accepted.empty()) {
    fmt::print("{}also accepted (lower priority): {}\n", indent, fmt::join(e.also_accepted, ", "));
  }
  if (e.rejected.empty()) return;
  size_t width = 0;
  for (const ExplainRejection& r : e.rejected) width = std::max(width, r.kernel.size());
  fmt::print("{}rejected:\n", indent);
  for (const ExplainRejection& r : e.rejected) {
    fmt::print("{}  {:<{}}  {}\n", indent, r.kernel, width, r.reason);
  }
}

void print_details(const ExplainReport& report) {
  std::vector<DetailKey> order;
  std::map<DetailKey, std::vector<std::string>> names;
  std::map<DetailKey, const ExplainRow*> sample;
  for (const ExplainRow& row : report.layers) {
    DetailKey key = detail_key(row);
    if (!names.contains(key)) {
      order.push_back(key);
      sample[key] = &row;
    }
    names[key].push_back(row.name);
  }
  for (const DetailKey& key : order) {
    const ExplainRow& row = *sample[key];
    const std::vector<std::string>& members = names[key];
    fmt::print("\n{}{}:\n", fmt::join(fold_layer_names(members), ", "),
               members.size() > 1 ? fmt::format(" ({} layers)", members.size()) : "");
    if (!row.note.empty()) fmt::print("  note: {}\n", row.note);
    if (const std::string by_m = buckets_text(row); !by_m.empty()) {
      fmt::print("  by M: {}\n", by_m);
    }
    if (row.selections.size() == 1) {
      print_selection(row.selections.front(), "  ");
      continue;
    }
    for (const ExplainSelection& e : row.selections) {
      fmt::print("  {} ({}):\n", m_range(e.m_min, e.m_max),
                 e.kernel.empty() ? "no kernel" : e.kernel);
      print_selection(e, "    ");
    }
  }
}

Status run_explain(const ExplainCliOptions& opts) {
  QL_ASSIGN_OR_RETURN(Device device, device_from_flags(opts.device, opts.target));
  QL_ASSIGN_OR_RETURN(SelectionPolicy policy,
                      policy_from_flags(opts.backend, opts.kernel, opts.int8_activations));
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(opts.model));
  ExplainOptions options;
  options.tp = opts.tp;
  QuantOptions quant;
  quant.quantization = opts.quantization;
  options.act_dtype = dtype_flag(opts.act_dtype);
  options.out_dtype = dtype_flag(opts.out_dtype);
  options.max_rows = opts.max_rows;
  QL_ASSIGN_OR_RETURN(ExplainReport report,
                      explain_model(checkpoint, device, policy, options, quant));
  if (opts.json) {
    fmt::print("{}\n", report.to_json());
  } else {
    std::stable_sort(report.layers.begin(), report.layers.end(),
                     [](const ExplainRow& a, const ExplainRow& b) {
                       return model_order(a.name) < model_order(b.name);
                     });
    print_table(report);
    print_details(report);
  }
  return Status::ok_status();
}

}  // namespace

void add_explain_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ExplainCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Show the kernel each linear layer would run, the FP8 mode, and why not others");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  CLI::Option* device = cmd->add_option("--device", opts->device,
                                        "Device of this machine: cpu, cuda[:N], opencl[:N], xpu")
                            ->capture_default_str();
  CLI::Option* target = cmd->add_option(
      "--target", opts->target,
      "Simulate a device: cpu:generic|cpu:avx2|cpu:avx512|cpu:amx|cuda:smNN|opencl:intel-gpu|"
      "opencl:intel-xe-lp|opencl:pocl|xpu");
  target->excludes(device);
  cmd->add_option("--linear-backend", opts->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--kernel", opts->kernel, "Only this kernel may run");
  add_int8_activations_flag(cmd, &opts->int8_activations);
  cmd->add_option("--tp", opts->tp, "Tensor-parallel size (rank 0's view)")
      ->check(int_in_range(1, kMaxTpOption))
      ->capture_default_str();
  cmd->add_option("--quantization", opts->quantization,
                  "Quantize an unquantized checkpoint online (fp8)")
      ->check(CLI::IsMember({"fp8"}));
  cmd->add_option("--dtype", opts->act_dtype, "Activation dtype the layers get: bf16, f16 or f32")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  cmd->add_option("--out-dtype", opts->out_dtype, "Output dtype the layers write: f32, bf16, f16")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  cmd->add_option("--max-rows", opts->max_rows,
                  "Explain M (rows of x) from 1 to this: the decode and prefill buckets")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_explain(*opts); }); });
}

}  // namespace qlinear
