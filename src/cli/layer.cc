// `qlinear layer`: runs one linear layer of a checkpoint on an input read from a safetensors file
// and writes the output, through the same selection, prepare and run path the runner uses. An
// unfused shard name (q_proj) runs its fused layer and keeps that shard's columns.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "cli/option_checks.h"
#include "convert/convert.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "kernels/select.h"
#include "qlinear/linear.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear {
namespace {

struct LayerCliOptions {
  std::string model;
  std::string name;
  std::string input;
  std::string output;
  std::string device = "cpu";
  std::string target;
  std::string backend = "auto";
  std::string kernel;
  bool int8_activations = false;
  bool force_output = false;
  int threads = 0;
  std::string out_dtype = "f32";
};

// The layer to run and, for a shard name, which columns of its output to keep.
struct LayerChoice {
  const LinearLayer* layer = nullptr;
  int shard = -1;  // index into layer->shards, or -1 for the whole (fused) layer
};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

Result<LayerChoice> find_layer(const std::vector<LinearLayer>& layers, const std::string& name,
                               const std::string& model) {
  std::vector<std::string> known;
  for (const LinearLayer& layer : layers) {
    if (layer.name == name) return LayerChoice{&layer, -1};
    known.push_back(layer.name);
    for (size_t s = 0; s < layer.shards.size(); ++s) {
      if (layer.shards.size() > 1 && layer.shards[s] == name) {
        return LayerChoice{&layer, static_cast<int>(s)};
      }
      if (layer.shards.size() > 1) known.push_back(layer.shards[s]);
    }
  }
  std::stable_sort(known.begin(), known.end(), [&](const std::string& a, const std::string& b) {
    return edit_distance(name, a) < edit_distance(name, b);
  });
  known.resize(std::min<size_t>(known.size(), 5));
  return make_error(ErrorCode::kNotFound,
                    "--name \"{}\": no linear layer of that name in {} ({} linear layers); "
                    "closest names: {}",
                    name, model, layers.size(), fmt::join(known, ", "));
}

// Tensor `x` of the input file, checked against the layer's K and copied into aligned storage.
Result<Tensor> read_input(const std::string& path, int64_t K, const std::string& layer_name) {
  QL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
  const TensorInfo* info = file->find("x");
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const TensorInfo& t : file->tensors()) names.push_back(fmt::format("\"{}\"", t.name));
    return make_error(
        ErrorCode::kNotFound,
        "{}: no tensor \"x\" (the layer input, [M, K={}] f32, f16 or bf16); the "
        "file holds {}",
        path, K,
        names.empty() ? std::string("no tensors") : fmt::format("{}", fmt::join(names, ", ")));
  }
  if (info->dtype != DType::kF32 && info->dtype != DType::kF16 && info->dtype != DType::kBF16) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: \"x\" has dtype {}; the layer input must be f32, f16 or bf16", path,
                      dtype_name(info->dtype));
  }
  if (info->shape.size() != 2 || info->shape[1] != K || info->shape[0] < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: \"x\" has shape {}; layer \"{}\" expects [M, K={}] with M >= 1", path,
                      shape_to_string(info->shape), layer_name, K);
  }
  QL_ASSIGN_OR_RETURN(Tensor x, Tensor::allocate(info->dtype, info->shape));
  const std::span<const std::byte> bytes = file->data(*info);
  std::memcpy(x.data(), bytes.data(), bytes.size());
  return x;
}

Status run_layer(const LayerCliOptions& opts) {
  if (!opts.target.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--target {}: a simulated device cannot run a layer; `qlinear layer` runs on "
                      "--device (this machine), `qlinear explain --target {}` shows what would "
                      "run there",
                      opts.target, opts.target);
  }
  QL_ASSIGN_OR_RETURN(Device device, device_from_flags(opts.device, ""));
  QL_ASSIGN_OR_RETURN(SelectionPolicy policy,
                      policy_from_flags(opts.backend, opts.kernel, opts.int8_activations));
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(opts.model));
  QL_ASSIGN_OR_RETURN(auto config, parse_quant_config(checkpoint));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  QL_ASSIGN_OR_RETURN(LayerChoice choice, find_layer(layers, opts.name, opts.model));
  const LinearLayer& layer = *choice.layer;
  // (choice.shard may be reset below when the layer runs unfused.)

  QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(checkpoint, layer));
  if (loaded.parts.size() > 1) {
    // Shards that cannot be fused run alone: a shard name runs its own part, whole.
    if (choice.shard < 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--name {}: this layer {}; name one of its shards ({})", opts.name,
                        loaded.unfused_reason, fmt::join(layer.shards, ", "));
    }
    Canonical part = std::move(loaded.parts[static_cast<std::size_t>(choice.shard)]);
    loaded.parts = {std::move(part)};
    choice.shard = -1;
  }
  const Canonical& weights = loaded.parts.front();
  QL_ASSIGN_OR_RETURN(Tensor x, read_input(opts.input, weights.K(), opts.name));

  const int64_t M = x.shape()[0];
  const int64_t N = weights.N();
  LinearOptions options;
  options.policy = policy;
  options.act_dtype = x.dtype();
  options.out_dtype = opts.out_dtype == "bf16"  ? DType::kBF16
                      : opts.out_dtype == "f16" ? DType::kF16
                                                : DType::kF32;
  options.max_rows = M;
  QL_ASSIGN_OR_RETURN(Linear linear, Linear::create(weights, device, options, weights.name));
  QL_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(options.out_dtype, {M, N}));
  QL_ASSIGN_OR_RETURN(
      Tensor workspace,
      Tensor::allocate(DType::kU8, {static_cast<int64_t>(linear.workspace_bytes(M))}));
  ExecContext ctx;
  ctx.threads = opts.threads;
  ctx.workspace = {workspace.data(), workspace.nbytes(), Location::host()};
  QL_RETURN_IF_ERROR(linear.run(x.matrix(), y.matrix(), ctx));
  const LinearBucket& bucket = linear.bucket_for(M);
  const std::string kernel_text =
      bucket.engine.empty() ? bucket.kernel : fmt::format("{} [{}]", bucket.kernel, bucket.engine);

  // A shard keeps its own columns of the fused output.
  int64_t first = 0;
  int64_t width = N;
  std::string ran = weights.name;
  if (choice.shard >= 0) {
    if (weights.shard_sizes.size() != layer.shards.size()) {
      return make_error(ErrorCode::kInternal,
                        "layer \"{}\": {} shard sizes for {} shards; cannot slice \"{}\"",
                        layer.name, weights.shard_sizes.size(), layer.shards.size(), opts.name);
    }
    for (int s = 0; s < choice.shard; ++s) first += weights.shard_sizes[static_cast<size_t>(s)];
    width = weights.shard_sizes[static_cast<size_t>(choice.shard)];
    ran = fmt::format("{}, columns {}..{} of {}", layer.name, first, first + width - 1, N);
  }
  const std::size_t elem = dtype_size(y.dtype());
  std::vector<std::byte> out(static_cast<size_t>(M * width) * elem);
  const auto* y_data = static_cast<const std::byte*>(y.data());
  for (int64_t m = 0; m < M; ++m) {
    std::memcpy(out.data() + static_cast<size_t>(m * width) * elem,
                y_data + static_cast<size_t>(m * N + first) * elem,
                static_cast<size_t>(width) * elem);
  }
  SafetensorsWriter writer;
  writer.add("y", y.dtype(), {M, width}, out);
  writer.set_metadata("layer", opts.name);
  writer.set_metadata("kernel", bucket.kernel);
  QL_RETURN_IF_ERROR(writer.write(opts.output, OutputOptions{opts.force_output}));

  if (choice.shard >= 0) {
    fmt::print(stderr, "qlinear: layer {}: kernel {} (problem {}; ran {})\n", opts.name,
               kernel_text, bucket.problem, ran);
  } else {
    fmt::print(stderr, "qlinear: layer {}: kernel {} (problem {})\n", opts.name, kernel_text,
               bucket.problem);
  }
  return Status::ok_status();
}

}  // namespace

void add_layer_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<LayerCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "layer", "Run one linear layer on an input tensor x and write its output y");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  cmd->add_option("--name", opts->name,
                  "Layer name: fused (qkv_proj, gate_up_proj) or one of its shards (q_proj)")
      ->required();
  cmd->add_option("--input", opts->input, "safetensors file with tensor x [M, K] (f32/f16/bf16)")
      ->required();
  cmd->add_option("--output", opts->output,
                  "safetensors file to write with tensor y [M, N] (f32 unless --out-dtype)")
      ->required();
  cmd->add_option("--out-dtype", opts->out_dtype, "Dtype of y: f32, bf16 or f16")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  cmd->add_flag("--force-output", opts->force_output,
                "Write through a symbolic link, or into a device or FIFO (e.g. /dev/null), "
                "instead of refusing");
  cmd->add_option("--device", opts->device,
                  "Device of this machine: cpu, cuda[:N], opencl[:N], xpu")
      ->capture_default_str();
  cmd->add_option("--target", opts->target, "Refused: a simulated device cannot run anything");
  cmd->add_option("--linear-backend", opts->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--kernel", opts->kernel, "Only this kernel may run");
  add_int8_activations_flag(cmd, &opts->int8_activations);
  cmd->add_option("--threads", opts->threads, "CPU threads (0: all cores)")
      ->check(int_in_range(0, kMaxThreadsOption))
      ->capture_default_str();
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_layer(*opts); }); });
}

}  // namespace qlinear
