// `qlinear bench`: times the kernel the registry picks for each (scheme, shape, batch) on random
// weights, against the machine's read bandwidth and OpenBLAS sgemm measured in the same run
// (bench/bench_driver.h). Build with the release preset for meaningful numbers.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_driver.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "core/parse_number.h"

namespace qlinear {
namespace {

// Option limits: far above any real layer (K, N <= 2^20; 2^33 weights is 4 GiB at 4 bits), low
// enough that a typo cannot ask for petabytes.
constexpr int64_t kMaxBenchExtent = int64_t{1} << 20;
constexpr int64_t kMaxBenchWeights = int64_t{1} << 33;
constexpr int64_t kMaxBenchBatch = int64_t{1} << 16;
constexpr int64_t kMaxRotateMb = int64_t{1} << 20;

struct BenchCliOptions {
  std::string device = "cpu";
  std::vector<std::string> schemes;
  std::vector<std::string> shapes;
  std::vector<int64_t> batches;
  std::string problem;
  std::string kernel;
  std::string backend = "auto";
  std::string shapes_file;
  std::string act_dtype = "bf16";
  std::string out_dtype = "f32";
  std::string peers;
  int threads = 0;
  int64_t rotate_mb = 256;
  bool json = false;
  bool quick = false;
  bool no_blas = false;
};

// The shapes file: --shapes, else bench/shapes.txt under the working directory, else the one of
// the source tree this binary was built from.
std::string default_shapes_file() {
  if (std::filesystem::exists("bench/shapes.txt")) return "bench/shapes.txt";
  return QLINEAR_BENCH_SHAPES;
}

void print_text_record(const bench::BenchRecord& r) {
  if (!r.device.empty()) {  // --device cuda
    const std::string peer = r.peer_bf16_s > 0 ? fmt::format("bf16 cuBLAS {:8.1f} us  x{:5.2f}",
                                                             r.peer_bf16_s * 1e6, r.speedup_bf16)
                                               : "";
    fmt::print(
        "{:<16} {:>6}x{:<6} M={:<4} {:<26} {:9.1f} us {:7.1f} GB/s ({:4.2f} x floor) "
        "{:8.1f} TFLOP/s  {}\n",
        r.scheme, r.K, r.N, r.M, r.kernel, r.median_s * 1e6, r.gbps, r.ratio_floor, r.gflops / 1e3,
        peer);
    std::fflush(stdout);
    return;
  }
  const std::string blas = r.blas_median_s > 0 ? fmt::format("sgemm {:9.3f} ms  x{:5.2f}",
                                                             r.blas_median_s * 1e3, r.ratio_blas)
                                               : "";
  fmt::print(
      "{:<16} {:>6}x{:<6} M={:<4} {:<24} {:9.3f} ms {:7.1f} GB/s ({:4.2f} x membw) "
      "{:7.1f} GFLOP/s  {}\n",
      r.scheme, r.K, r.N, r.M, r.kernel, r.median_s * 1e3, r.gbps, r.ratio_membw, r.gflops, blas);
  std::fflush(stdout);
}

Status run_bench_command(const BenchCliOptions& o) {
  bench::BenchOptions options;
  options.device = o.device;
  for (const std::string& s : o.schemes) options.schemes.push_back(s);
  for (const std::string& text : o.shapes) {
    // Range-checked first: the driver allocates K*N weights.
    QL_RETURN_IF_ERROR(parse_dims_2d(text, kMaxBenchExtent, kMaxBenchWeights, "--shape").status());
    QL_ASSIGN_OR_RETURN(bench::BenchShape shape, bench::parse_shape(text));
    options.shapes.push_back(shape);
  }
  options.shapes_path = o.shapes_file.empty() ? default_shapes_file() : o.shapes_file;
  options.batches = o.batches;
  options.problem = o.problem;
  options.kernel = o.kernel;
  options.backend = o.backend;
  options.threads = o.threads;
  options.quick = o.quick;
  if (o.rotate_mb < 0) {
    return make_error(ErrorCode::kInvalidArgument, "--rotate-mb {}: must be >= 0", o.rotate_mb);
  }
  options.rotate_bytes = o.rotate_mb << 20;
  options.blas = !o.no_blas;
  options.progress = !o.json;
  if (o.act_dtype == "bf16") {
    options.act_dtype = DType::kBF16;
  } else if (o.act_dtype == "f16") {
    options.act_dtype = DType::kF16;
  } else if (o.act_dtype == "f32") {
    options.act_dtype = DType::kF32;
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "--act-dtype {}: activations are bf16, f16 or f32", o.act_dtype);
  }
  if (o.out_dtype == "bf16") {
    options.out_dtype = DType::kBF16;
  } else if (o.out_dtype == "f16") {
    options.out_dtype = DType::kF16;
  } else if (o.out_dtype == "f32") {
    options.out_dtype = DType::kF32;
  } else {
    return make_error(ErrorCode::kInvalidArgument, "--out-dtype {}: outputs are bf16, f16 or f32",
                      o.out_dtype);
  }
  options.peers_path = o.peers;
  if (o.threads < 0) {
    return make_error(ErrorCode::kInvalidArgument, "--threads {}: must be >= 0 (0 = all cores)",
                      o.threads);
  }
  auto on_record = [&o](const bench::BenchRecord& r) {
    if (o.json) {
      fmt::print("{}\n", bench::record_json(r));
      std::fflush(stdout);
    } else {
      print_text_record(r);
    }
  };
  QL_ASSIGN_OR_RETURN(const std::vector<bench::BenchRecord> records,
                      bench::run_bench(options, on_record));
  if (!o.json && !records.empty()) {
    double low = records.front().membw_gbps;
    double high = low;
    for (const bench::BenchRecord& r : records) {
      low = std::min(low, r.membw_gbps);
      high = std::max(high, r.membw_gbps);
    }
    fmt::print(
        "\nmemory read bandwidth (same run, before each shape, {} passes over 1 GiB): "
        "{:.1f} to {:.1f} GB/s\n\n{}",
        o.quick ? 3 : 5, low, high, bench::records_table(records));
  }
  return Status::ok_status();
}

}  // namespace

void add_bench_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<BenchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time the selected kernels against memory bandwidth and OpenBLAS sgemm");
  cmd->add_option("--device", opts->device, "Device to run on")->capture_default_str();
  cmd->add_option(
         "--scheme", opts->schemes,
         fmt::format("Weight schemes (default: {})", fmt::join(bench::default_schemes(), ", ")))
      ->check(CLI::IsMember(bench::scheme_names()))
      ->delimiter(',');
  cmd->add_option("--shape", opts->shapes,
                  "Layer shapes KxN (default: every shape of the "
                  "shapes file)")
      ->delimiter(',');
  cmd->add_option("--batch", opts->batches, "Batch sizes M (default: 1,4,16,64,256)")
      ->check(int_in_range(1, kMaxBenchBatch))
      ->delimiter(',');
  cmd->add_option("--problem", opts->problem,
                  "A problem string (a QLINEAR_VERBOSE=dispatch line) instead of scheme and shape");
  cmd->add_option("--kernel", opts->kernel, "Run this kernel instead of the registry's choice");
  cmd->add_option("--linear-backend", opts->backend, "auto, native, blas or reference")
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Threads (0 = all cores)")
      ->check(int_in_range(0, kMaxThreadsOption))
      ->capture_default_str();
  cmd->add_option("--shapes", opts->shapes_file, "Shapes file (\"K N label\" lines)");
  cmd->add_option("--act-dtype", opts->act_dtype, "Activation dtype: bf16, f16 or f32")
      ->capture_default_str();
  cmd->add_option("--out-dtype", opts->out_dtype, "Output dtype: f32, bf16 or f16")
      ->capture_default_str();
  cmd->add_option("--peers", opts->peers,
                  "--device cuda: gpu_peers.py's JSON from the same device call (joins the peers' "
                  "times to the records)");
  cmd->add_flag("--json", opts->json, "One JSON record per (shape, batch) on stdout");
  cmd->add_option("--rotate-mb", opts->rotate_mb,
                  "Weight megabytes the rotated copies exceed (defeats the L3); 0 = one copy, "
                  "the in-cache compute ceiling for layers that fit")
      ->check(int_in_range(0, kMaxRotateMb))
      ->capture_default_str();
  cmd->add_flag("--quick", opts->quick, "Fewer repetitions and a smaller weight rotation");
  cmd->add_flag("--no-blas", opts->no_blas, "Skip the OpenBLAS sgemm comparison");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_bench_command(*opts); }); });
}

}  // namespace qlinear
