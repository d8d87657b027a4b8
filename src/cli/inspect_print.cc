// Text and JSON renderings of an InspectReport.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli/inspect_report.h"
#include "core/escape.h"

namespace qlinear {
namespace {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string opt_text(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

struct Totals {
  uint64_t on_disk = 0;
  uint64_t bf16 = 0;
  int quantized = 0;
  int skipped = 0;
};

Totals totals_of(const InspectReport& report) {
  Totals t;
  for (const InspectLayer& l : report.layers) {
    t.on_disk += l.bytes_on_disk;
    t.bf16 += l.bytes_bf16;
    (l.quantized ? t.quantized : t.skipped) += 1;
  }
  return t;
}

double ratio(uint64_t a, uint64_t b) {
  return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
}

std::string fp8_text(const InspectLayer& l) {
  if (l.kind != "fp8") return "-";
  std::string weight = l.fp8_weight;
  if (l.fp8_weight == "block") weight += fmt::format(" {}x{}", l.block_n, l.block_k);
  return weight + " / " + l.activation;
}

}  // namespace

std::string InspectLayer::group_text() const {
  if (kind != "int") return "-";
  if (channelwise) return fmt::format("channel (K={})", K);
  return std::to_string(group_size);
}

void print_inspect_text(const InspectReport& report) {
  const InspectModel& m = report.model;
  // Strings from config.json reach the terminal escaped (core/escape.h); tensor names were
  // checked when the header was read.
  const auto text = [](const std::string& s) { return s.empty() ? "?" : escape_for_terminal(s); };
  fmt::print("model         {}\n", escape_for_terminal(m.dir));
  fmt::print("              {} ({}), dtype {}\n", text(m.architecture), text(m.model_type),
             text(m.torch_dtype));
  fmt::print(
      "              hidden {}, intermediate {}, layers {}, heads {} (kv {}, head_dim {}), "
      "vocab {}\n",
      opt_text(m.hidden_size), opt_text(m.intermediate_size), opt_text(m.num_layers),
      opt_text(m.num_heads), opt_text(m.num_kv_heads), opt_text(m.head_dim),
      opt_text(m.vocab_size));
  fmt::print("quantization  {}: {}\n", report.quantization.format,
             escape_for_terminal(report.quantization.summary));
  fmt::print("              from {}\n\n", escape_for_terminal(report.quantization.source));

  size_t name_width = 5;
  size_t format_width = 6;
  for (const InspectLayer& l : report.layers) {
    name_width = std::max(name_width, l.name.size());
    format_width = std::max(format_width, l.format.size());
  }
  fmt::print("{:<{}}  {:>11}  {:<{}}  {:>4}  {:<15}  {:<4}  {:<9}  {:<27}  {:>10}  {:>10}\n",
             "layer", name_width, "N x K", "format", format_width, "bits", "group", "sym",
             "act-order", "fp8 weight / activation", "on disk", "as bf16");
  for (const InspectLayer& l : report.layers) {
    const bool is_int = l.kind == "int";
    fmt::print("{:<{}}  {:>11}  {:<{}}  {:>4}  {:<15}  {:<4}  {:<9}  {:<27}  {:>10}  {:>10}",
               l.name, name_width, fmt::format("{} x {}", l.N, l.K),
               l.quantized ? l.format : "dense", format_width, l.bits, l.group_text(),
               is_int ? (l.sym ? "sym" : "asym") : "-", is_int ? (l.act_order ? "yes" : "no") : "-",
               fp8_text(l), human_bytes(l.bytes_on_disk), human_bytes(l.bytes_bf16));
    if (!l.quantized) fmt::print("  skipped: {}", text(l.skip_reason));
    fmt::print("\n");
  }
  const Totals t = totals_of(report);
  fmt::print("\ntotals        {} linear layers ({} quantized, {} dense)\n", report.layers.size(),
             t.quantized, t.skipped);
  fmt::print("              linear weights {} on disk vs {} as bf16 (ratio {:.3f})\n",
             human_bytes(t.on_disk), human_bytes(t.bf16), ratio(t.on_disk, t.bf16));
  fmt::print("              checkpoint files {}\n", human_bytes(report.checkpoint_bytes));
}

void print_inspect_json(const InspectReport& report) {
  using json = nlohmann::ordered_json;
  const InspectModel& m = report.model;
  const auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  json out;
  out["model"] = {{"dir", m.dir},
                  {"architecture", m.architecture},
                  {"model_type", m.model_type},
                  {"torch_dtype", m.torch_dtype},
                  {"hidden_size", opt(m.hidden_size)},
                  {"intermediate_size", opt(m.intermediate_size)},
                  {"num_hidden_layers", opt(m.num_layers)},
                  {"num_attention_heads", opt(m.num_heads)},
                  {"num_key_value_heads", opt(m.num_kv_heads)},
                  {"head_dim", opt(m.head_dim)},
                  {"vocab_size", opt(m.vocab_size)}};
  out["quantization"] = {{"format", report.quantization.format},
                         {"summary", report.quantization.summary},
                         {"source", report.quantization.source}};
  json layers = json::array();
  for (const InspectLayer& l : report.layers) {
    json row = {{"name", l.name},
                {"shards", l.shards},
                {"shard_sizes", l.shard_sizes},
                {"N", l.N},
                {"K", l.K},
                {"format", l.format},
                {"quantized", l.quantized},
                {"skip_reason", l.quantized ? json(nullptr) : json(l.skip_reason)},
                {"kind", l.kind},
                {"scheme", l.scheme},
                {"bits", l.bits}};
    if (l.kind == "int") {
      row["group_size"] = l.group_size;
      row["group"] = l.group_text();
      row["channelwise"] = l.channelwise;
      row["sym"] = l.sym;
      row["act_order"] = l.act_order;
      row["packing"] = l.packing;
    }
    if (l.kind == "fp8") {
      row["fp8_weight"] = l.fp8_weight;
      if (l.fp8_weight == "block") row["fp8_block"] = {l.block_n, l.block_k};
      row["activation"] = l.activation;
    }
    if (l.kind == "dense") row["dtype"] = l.dense_dtype;
    row["bytes_on_disk"] = l.bytes_on_disk;
    row["bytes_bf16"] = l.bytes_bf16;
    layers.push_back(std::move(row));
  }
  out["layers"] = std::move(layers);
  const Totals t = totals_of(report);
  out["totals"] = {{"linear_layers", report.layers.size()},
                   {"quantized_layers", t.quantized},
                   {"skipped_layers", t.skipped},
                   {"bytes_on_disk", t.on_disk},
                   {"bytes_bf16", t.bf16},
                   {"ratio", ratio(t.on_disk, t.bf16)},
                   {"checkpoint_bytes", report.checkpoint_bytes}};
  fmt::print("{}\n", out.dump(2));
}

}  // namespace qlinear
