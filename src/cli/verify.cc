// `qlinear verify`: runs every linear layer of a checkpoint through the kernel selection picks
// on a device and through the reference kernel (on the host), on the same seeded random inputs,
// and prints the relative error per layer; exits non-zero when one is past the tolerance. This is
// how a user checks that a platform's kernels are right on their own model.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "convert/convert.h"
#include "core/progress.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "kernels/device_context.h"
#include "qlinear/linear.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear {
namespace {

struct VerifyCliOptions {
  std::string model;
  std::string device = "cpu";
  std::string backend = "auto";
  std::string kernel;
  std::string quantization;
  std::string dtype = "f32";
  int64_t rows = 5;
  double tolerance = -1.0;  // < 0: by activation dtype
  uint64_t seed = 1;
  bool int8_activations = false;
  bool json = false;
};

struct VerifyRow {
  std::string layer;
  std::string kernel;
  double error = 0.0;
  bool ok = true;
};

// f32 / f16 / bf16 values of x from uniform floats in [-1, 1).
Result<Tensor> random_input(DType dtype, int64_t M, int64_t K, std::mt19937_64& rng) {
  QL_ASSIGN_OR_RETURN(Tensor x, Tensor::allocate(dtype, {M, K}));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < M * K; ++i) {
    const float v = u(rng);
    if (dtype == DType::kF32) {
      x.data_as<float>()[i] = v;
    } else {
      x.data_as<uint16_t>()[i] = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
    }
  }
  return x;
}

// y = layer(x) on the layer's device: x uploaded, y (f32) downloaded.
Result<std::vector<float>> run_on(const Linear& layer, const Device& device, const Tensor& x) {
  QL_ASSIGN_OR_RETURN(DeviceContext * ctx, device_context(device));
  const int64_t M = x.shape()[0];
  const Allocator& memory = ctx->allocator();
  QL_ASSIGN_OR_RETURN(Tensor dx, Tensor::allocate(x.dtype(), x.shape(), memory));
  QL_ASSIGN_OR_RETURN(Tensor dy, Tensor::allocate(DType::kF32, {M, layer.N()}, memory));
  QL_ASSIGN_OR_RETURN(
      Tensor ws,
      Tensor::allocate(DType::kU8, {static_cast<int64_t>(layer.workspace_bytes(M))}, memory));
  QL_RETURN_IF_ERROR(ctx->upload(dx.data(), 0, x.data(), x.nbytes()));
  ExecContext exec;
  exec.stream = ctx->default_stream();
  exec.workspace = {ws.data(), ws.nbytes(), memory.location()};
  QL_RETURN_IF_ERROR(layer.run(dx.matrix(), dy.matrix(), exec));
  QL_RETURN_IF_ERROR(ctx->synchronize(exec.stream));
  std::vector<float> y(static_cast<std::size_t>(M * layer.N()));
  QL_RETURN_IF_ERROR(ctx->download(y.data(), dy.data(), 0, y.size() * sizeof(float)));
  return y;
}

Status run_verify(const VerifyCliOptions& opts) {
  QL_ASSIGN_OR_RETURN(Device device, device_from_flags(opts.device, ""));
  QL_ASSIGN_OR_RETURN(Device host, detect_device("cpu"));
  QL_ASSIGN_OR_RETURN(SelectionPolicy policy,
                      policy_from_flags(opts.backend, opts.kernel, opts.int8_activations));
  SelectionPolicy reference = policy;
  reference.backend = LinearBackend::kReference;
  reference.kernel.clear();
  const DType dtype = opts.dtype == "bf16"  ? DType::kBF16
                      : opts.dtype == "f16" ? DType::kF16
                                            : DType::kF32;
  // f32 activations: float accumulation against double (and the split-bf16 CPU paths, ~1e-6);
  // 16-bit activations: kernels may round them or accumulate in lower precision.
  const double tolerance =
      opts.tolerance >= 0 ? opts.tolerance : (dtype == DType::kF32 ? 1e-4 : 2e-2);
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(opts.model));
  QuantOptions quant;
  quant.quantization = opts.quantization;
  QL_ASSIGN_OR_RETURN(auto config, parse_quant_config(checkpoint, quant));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  std::mt19937_64 rng(opts.seed);
  std::vector<VerifyRow> rows;
  Progress progress("verifying", layers.size(), !opts.json);
  for (const LinearLayer& layer : layers) {
    QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(checkpoint, layer));
    for (const Canonical& part : loaded.parts) {
      LinearOptions lo;
      lo.policy = policy;
      lo.act_dtype = dtype;
      lo.max_rows = opts.rows;
      QL_ASSIGN_OR_RETURN(Linear chosen, Linear::create(part, device, lo, part.name));
      lo.policy = reference;
      QL_ASSIGN_OR_RETURN(Linear oracle, Linear::create(part, host, lo, part.name));
      QL_ASSIGN_OR_RETURN(Tensor x, random_input(dtype, opts.rows, part.K(), rng));
      QL_ASSIGN_OR_RETURN(std::vector<float> y, run_on(chosen, device, x));
      QL_ASSIGN_OR_RETURN(std::vector<float> want, run_on(oracle, host, x));
      double diff = 0.0;
      double norm = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double d = static_cast<double>(y[i]) - want[i];
        diff += d * d;
        norm += static_cast<double>(want[i]) * want[i];
      }
      VerifyRow row;
      row.layer = part.name;
      const LinearBucket& b = chosen.bucket_for(opts.rows);
      row.kernel = b.engine.empty() ? b.kernel : fmt::format("{} [{}]", b.kernel, b.engine);
      row.error = std::isfinite(diff) ? std::sqrt(diff / std::max(norm, 1e-300)) : INFINITY;
      row.ok = row.error <= tolerance;
      rows.push_back(std::move(row));
    }
    progress.advance(1);
  }
  progress.finish();
  int failed = 0;
  for (const VerifyRow& r : rows) failed += r.ok ? 0 : 1;
  if (opts.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const VerifyRow& r : rows) {
      out.push_back({{"layer", r.layer}, {"kernel", r.kernel}, {"error", r.error}, {"ok", r.ok}});
    }
    fmt::print("{}\n", nlohmann::json{{"device", device.describe()},
                                      {"tolerance", tolerance},
                                      {"layers", out},
                                      {"failed", failed}}
                           .dump(2));
  } else {
    std::size_t width = 5;
    for (const VerifyRow& r : rows) width = std::max(width, r.layer.size());
    fmt::print(
        "device: {}   activations {}, {} rows, tolerance {:.0e} (relative Frobenius vs "
        "the reference kernel)\n\n",
        device.describe(), dtype_name(dtype), opts.rows, tolerance);
    fmt::print("{:<{}}  {:>10}  {}\n", "LAYER", width, "ERROR", "KERNEL");
    for (const VerifyRow& r : rows) {
      fmt::print("{:<{}}  {:>10.2e}  {}{}\n", r.layer, width, r.error, r.kernel,
                 r.ok ? "" : "   <-- past the tolerance");
    }
    fmt::print("\n{} of {} layers within the tolerance\n", rows.size() - failed, rows.size());
  }
  if (failed > 0) {
    return make_error(ErrorCode::kNoKernel,
                      "{} of {} layers differ from the reference by more than {:.0e} on {}", failed,
                      rows.size(), tolerance, device.describe());
  }
  return Status::ok_status();
}

}  // namespace

void add_verify_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<VerifyCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check every layer's kernel against the reference kernel on random inputs");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  cmd->add_option("--device", opts->device, "Device of this machine: cpu, cuda[:N], opencl, xpu")
      ->capture_default_str();
  cmd->add_option("--linear-backend", opts->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--kernel", opts->kernel, "Only this kernel may run");
  add_int8_activations_flag(cmd, &opts->int8_activations);
  cmd->add_option("--quantization", opts->quantization,
                  "Quantize an unquantized checkpoint online (fp8)")
      ->check(CLI::IsMember({"fp8"}));
  cmd->add_option("--dtype", opts->dtype, "Activation dtype: f32, bf16 or f16")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  cmd->add_option("--rows", opts->rows, "Rows M of the random input")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "Largest relative error accepted (default 1e-4 for f32 inputs, 2e-2 else)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", opts->seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_verify(*opts); }); });
}

}  // namespace qlinear
