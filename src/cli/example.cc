// `qlinear example`: writes a tiny Llama-shaped checkpoint in any supported format, from known
// values, to try the other commands on (and for the test suite).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/option_checks.h"
#include "fixtures/fixtures.h"

namespace qlinear {
namespace {

struct ExampleOptions {
  std::string format = "awq";
  std::string out;
  bool json = false;
  bool list = false;
  uint64_t seed = FixtureOptions{}.seed;
};

std::string_view granularity_text(Fp8WeightGranularity g) {
  switch (g) {
    case Fp8WeightGranularity::kTensor:
      return "tensor";
    case Fp8WeightGranularity::kChannel:
      return "channel";
    case Fp8WeightGranularity::kBlock:
      return "block";
  }
  return "?";
}

Status print_list(bool json) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (FixtureFormat f : all_fixture_formats()) {
      out.push_back(
          {{"name", fixture_format_name(f)}, {"description", fixture_format_description(f)}});
    }
    fmt::print("{}\n", out.dump(2));
    return Status::ok_status();
  }
  for (FixtureFormat f : all_fixture_formats()) {
    fmt::print("{:<24} {}\n", fixture_format_name(f), fixture_format_description(f));
  }
  return Status::ok_status();
}

void print_json(const FixtureModel& model) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const FixtureLayer& l : model.layers) {
    nlohmann::ordered_json row = {
        {"name", l.name}, {"N", l.N}, {"K", l.K}, {"quantized", l.spec.quantized}};
    if (l.spec.quantized && !l.spec.fp8) {
      row["bits"] = l.spec.bits;
      row["group_size"] = l.spec.group_size;
      row["channelwise"] = l.spec.channelwise;
      row["sym"] = l.spec.sym;
      row["act_order"] = l.spec.act_order;
    }
    if (l.spec.fp8) row["fp8_weight"] = granularity_text(l.spec.granularity);
    layers.push_back(std::move(row));
  }
  const nlohmann::ordered_json out = {{"format", fixture_format_name(model.format)},
                                      {"description", fixture_format_description(model.format)},
                                      {"dir", model.dir},
                                      {"files", model.files},
                                      {"quant_config_file", model.quant_config_file},
                                      {"layers", layers}};
  fmt::print("{}\n", out.dump(2));
}

void print_text(const FixtureModel& model) {
  int quantized = 0;
  for (const FixtureLayer& l : model.layers) quantized += l.spec.quantized ? 1 : 0;
  fmt::print("wrote the {} example ({}) to {}\n", fixture_format_name(model.format),
             fixture_format_description(model.format), model.dir);
  fmt::print("  files: {}\n", fmt::join(model.files, ", "));
  fmt::print("  linear layers: {} unfused ({} quantized, {} dense)\n", model.layers.size(),
             quantized, model.layers.size() - static_cast<size_t>(quantized));
  if (!model.quant_config_file.empty()) {
    fmt::print("  quantization config: {}\n", model.quant_config_file);
  }
  fmt::print("next: qlinear inspect --model {}\n", model.dir);
}

Status run_example(const ExampleOptions& opts) {
  if (opts.list) return print_list(opts.json);
  const std::optional<FixtureFormat> format = fixture_format_from_name(opts.format);
  if (!format) {
    return make_error(ErrorCode::kInvalidArgument, "--format {}: unknown example format",
                      opts.format);
  }
  FixtureOptions fixture_options;
  fixture_options.seed = opts.seed;
  QL_ASSIGN_OR_RETURN(FixtureModel model, write_fixture(*format, opts.out, fixture_options));
  if (opts.json) {
    print_json(model);
  } else {
    print_text(model);
  }
  return Status::ok_status();
}

}  // namespace

void add_example_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ExampleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "example", "Write a tiny Llama-shaped checkpoint in one of the supported formats");
  std::vector<std::string> names;
  for (FixtureFormat f : all_fixture_formats()) names.emplace_back(fixture_format_name(f));
  cmd->add_option("--format,-f", opts->format, "Checkpoint format (see --list)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  cmd->add_option("--out,-o", opts->out, "Directory to write (created; must be new or empty)");
  cmd->add_option("--seed", opts->seed, "Seed of the generated values")
      ->check(int_in_range(0, INT64_MAX))
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print what was written as JSON");
  cmd->add_flag("--list", opts->list, "List the formats and exit");
  cmd->callback([opts, &ctx] {
    if (!opts->list && opts->out.empty()) throw CLI::RequiredError("--out");
    run_command(ctx, [&] { return run_example(*opts); });
  });
}

}  // namespace qlinear
