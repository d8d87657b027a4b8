// `qlinear inspect`: opens a checkpoint, resolves every linear layer's quantization and loads
// each one through load_canonical, so every conversion check runs; then prints what it found.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inspect_report.h"
#include "convert/convert.h"
#include "core/progress.h"
#include "io/checkpoint.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  std::string quantization;
  std::vector<std::string> online_ignore;
};

std::optional<int64_t> int_key(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string string_key(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

InspectModel summarize_model(const Checkpoint& checkpoint) {
  const nlohmann::json& c = checkpoint.config();
  InspectModel m;
  m.dir = checkpoint.dir();
  const auto arch = c.find("architectures");
  if (arch != c.end() && arch->is_array() && !arch->empty() && arch->front().is_string()) {
    m.architecture = arch->front().get<std::string>();
  }
  m.model_type = string_key(c, "model_type");
  // transformers 4 writes "torch_dtype", transformers 5 "dtype".
  m.torch_dtype = string_key(c, "torch_dtype");
  if (m.torch_dtype.empty()) m.torch_dtype = string_key(c, "dtype");
  m.hidden_size = int_key(c, "hidden_size");
  m.intermediate_size = int_key(c, "intermediate_size");
  m.num_layers = int_key(c, "num_hidden_layers");
  m.num_heads = int_key(c, "num_attention_heads");
  m.num_kv_heads = int_key(c, "num_key_value_heads");
  m.head_dim = int_key(c, "head_dim");
  m.vocab_size = int_key(c, "vocab_size");
  return m;
}

// Bytes of every tensor, summed per module prefix ("model.layers.0.mlp.up_proj").
std::map<std::string, uint64_t, std::less<>> bytes_by_module(const Checkpoint& checkpoint) {
  std::map<std::string, uint64_t, std::less<>> bytes;
  for (const std::string& name : checkpoint.tensor_names()) {
    const auto dot = name.rfind('.');
    if (dot == std::string::npos) continue;
    const std::optional<TensorRef> ref = checkpoint.find(name);
    if (ref) bytes[name.substr(0, dot)] += ref->info->nbytes();
  }
  return bytes;
}

InspectLayer describe_layer(const LinearLayer& layer, const Canonical& canonical) {
  InspectLayer row;
  row.name = layer.name;
  row.shards = layer.shards;
  row.shard_sizes = canonical.shard_sizes;
  row.N = canonical.N();
  row.K = canonical.K();
  const QuantSpec& spec = layer.specs.front();
  row.format = std::string(quant_format_name(spec.format));
  row.quantized = spec.quantized;
  row.skip_reason = spec.skip_reason;
  row.scheme = canonical.describe();
  row.bytes_bf16 = static_cast<uint64_t>(row.N * row.K) * 2;
  if (const auto* w = std::get_if<IntWeights>(&canonical.weights)) {
    row.kind = "int";
    row.bits = w->bits;
    row.group_size = w->group_size;
    row.channelwise = (spec.int_spec && spec.int_spec->group_size < 0) || w->group_size >= w->K;
    row.sym = w->zeros.empty();
    row.act_order = !w->g_idx.empty();
    if (spec.int_spec) row.packing = std::string(int_packing_name(spec.int_spec->packing));
  } else if (const auto* f = std::get_if<Fp8Weights>(&canonical.weights)) {
    row.kind = "fp8";
    row.bits = 8;
    row.fp8_weight = std::string(fp8_weight_granularity_name(f->granularity));
    row.block_n = f->block_n;
    row.block_k = f->block_k;
    row.activation = std::string(act_quant_name(f->activation));
  } else if (const auto* d = std::get_if<DenseWeights>(&canonical.weights)) {
    row.kind = "dense";
    row.bits = static_cast<int>(dtype_size(d->dtype) * 8);
    row.dense_dtype = std::string(dtype_name(d->dtype));
  }
  return row;
}

// Model order for display: decoder layer index (numerically), then attention before MLP, other
// layers (the LM head) last.
std::pair<int64_t, int> display_key(const std::string& name) {
  int64_t index = std::numeric_limits<int64_t>::max();
  const auto pos = name.find("layers.");
  if (pos != std::string::npos) {
    const char* digits = name.c_str() + pos + 7;
    char* end = nullptr;
    const long long parsed = std::strtoll(digits, &end, 10);
    if (end != digits) index = parsed;
  }
  int rank = 4;
  const char* kinds[] = {"qkv_proj",     "q_proj",    "k_proj",  "v_proj",   "o_proj",
                         "gate_up_proj", "gate_proj", "up_proj", "down_proj"};
  const int ranks[] = {0, 0, 0, 0, 1, 2, 2, 2, 3};
  for (size_t i = 0; i < std::size(kinds); ++i) {
    if (name.ends_with(kinds[i])) {
      rank = ranks[i];
      break;
    }
  }
  return {index, rank};
}

Result<InspectReport> gather(const InspectOptions& opts) {
  std::unique_ptr<Progress> reading;
  uint64_t read_so_far = 0;
  const auto on_file = [&](uint64_t done, uint64_t total) {
    if (!reading) reading = std::make_unique<Progress>("reading   ", total);
    reading->advance(done - read_so_far);
    read_so_far = done;
  };
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(opts.model, on_file));
  if (reading) reading->finish();

  InspectReport report;
  report.model = summarize_model(checkpoint);
  report.checkpoint_bytes = checkpoint.bytes_on_disk();

  QuantOptions quant_options;
  quant_options.quantization = opts.quantization;
  quant_options.online_ignore = opts.online_ignore;
  QL_ASSIGN_OR_RETURN(std::unique_ptr<QuantConfig> config,
                      parse_quant_config(checkpoint, quant_options));
  report.quantization.format = std::string(quant_format_name(config->format()));
  report.quantization.summary = config->summary();
  report.quantization.source = !opts.quantization.empty() ? "--quantization " + opts.quantization
                               : checkpoint.quant_config_source().empty()
                                   ? std::string("none")
                                   : checkpoint.quant_config_source();

  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  std::stable_sort(layers.begin(), layers.end(), [](const LinearLayer& a, const LinearLayer& b) {
    return std::pair(display_key(a.name), a.name) < std::pair(display_key(b.name), b.name);
  });
  const auto module_bytes = bytes_by_module(checkpoint);
  Progress converting("converting", layers.size());
  for (const LinearLayer& layer : layers) {
    QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(checkpoint, layer));
    for (std::size_t i = 0; i < loaded.parts.size(); ++i) {
      // Shards that run unfused are listed one by one.
      const LinearLayer part =
          loaded.parts.size() == 1
              ? layer
              : LinearLayer{
                    layer.shards[i], {layer.shards[i]}, {layer.specs[i]}, loaded.unfused_reason};
      InspectLayer row = describe_layer(part, loaded.parts[i]);
      for (const std::string& shard : part.shards) {
        const auto it = module_bytes.find(shard);
        if (it != module_bytes.end()) row.bytes_on_disk += it->second;
      }
      report.layers.push_back(std::move(row));
    }
    converting.advance(1);
  }
  converting.finish();
  return report;
}

}  // namespace

void add_inspect_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Show a checkpoint's quantization, layer by layer, after loading every layer");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_option("--quantization", opts->quantization,
                  "Quantize an unquantized checkpoint online (fp8)")
      ->check(CLI::IsMember({"fp8"}));
  cmd->add_option("--online-ignore", opts->online_ignore,
                  "With --quantization: layer names or re:<regex> to keep dense");
  cmd->callback([opts, &ctx] {
    run_command(ctx, [&]() -> Status {
      QL_ASSIGN_OR_RETURN(InspectReport report, gather(*opts));
      if (opts->json) {
        print_inspect_json(report);
      } else {
        print_inspect_text(report);
      }
      return Status::ok_status();
    });
  });
}

}  // namespace qlinear
