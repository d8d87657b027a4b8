// The `qlinear bench` driver: times the kernel the registry selects (or --kernel) for each
// (scheme, shape, batch) on random canonical weights, next to two yardsticks measured by the same
// process in the same run, right before each shape's kernels: the machine's read bandwidth and
// OpenBLAS sgemm on f32 weights of the same shape.
//
// Weight rotation: every timed call reads a different copy of the weights, with enough copies to
// exceed 256 MB, so a 32 MB L3 cannot serve them (M = 1 is then a memory-bandwidth measurement).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/memory.h"
#include "core/status.h"
#include "kernels/problem.h"
#include "qlinear/dtype.h"

namespace qlinear::bench {

struct BenchShape {
  int64_t K = 0;
  int64_t N = 0;
  std::string label;  // "llama3-8b.qkv_proj", or "" for --shape
};

struct BenchOptions {
  std::string device = "cpu";
  std::vector<std::string> schemes;  // names from scheme_names(); empty: default_schemes()
  std::vector<BenchShape> shapes;    // empty: read shapes_path
  std::string shapes_path;           // bench/shapes.txt
  std::vector<int64_t> batches;      // empty: 1, 4, 16, 64, 256
  std::string problem;           // a LinearProblem string (a dispatch line): overrides scheme/shape
  std::string kernel;            // --kernel NAME, "" for the registry's choice
  std::string backend = "auto";  // --linear-backend
  int threads = 0;               // 0: all cores
  bool quick = false;            // fewer repetitions, smaller rotation
  bool blas = true;              // time cblas_sgemm as well
  DType act_dtype = DType::kBF16;  // activations as a model feeds them
  DType out_dtype = DType::kF32;   // outputs (a GPU model keeps bf16 hidden states)
  // --device cuda: gpu_peers.py's JSON of the same device call; its times for each (K, N, M)
  // join the records (peer_*_s and speedup_bf16).
  std::string peers_path;
  bool progress = true;  // progress bar on a terminal
  // Weight bytes each rotation exceeds (L3 is 32 MB here), and the bandwidth loop's buffer.
  int64_t rotate_bytes = int64_t{256} << 20;
  int64_t membw_bytes = int64_t{256} << 20;
};

struct BenchRecord {
  std::string scheme;
  std::string label;
  int64_t K = 0;
  int64_t N = 0;
  int64_t M = 0;
  std::string kernel;
  std::string engine;   // the kernel's algorithm at this M ("inline", "panel"), or ""
  std::string problem;  // the selected problem string (a reproducer)
  double median_s = 0.0;
  int reps = 0;
  int discarded = 0;  // timed calls dropped because the OS preempted a thread (shared machine)
  int64_t weight_bytes = 0;        // codes at their width + scales/zeros as checkpoints store them
  double gbps = 0.0;               // weight_bytes / median_s
  double gflops = 0.0;             // 2*M*N*K / median_s
  double membw_gbps = 0.0;         // mean of the two below
  double membw_before_gbps = 0.0;  // read bandwidth measured right before the kernel timing
  double membw_after_gbps = 0.0;   // ... and right after it
  double ratio_membw = 0.0;        // gbps / membw_gbps
  double blas_median_s = 0.0;      // 0 when not measured
  double ratio_blas = 0.0;         // blas_median_s / median_s (> 1: the kernel is faster)
  int blas_copies = 0;             // f32 weight copies the sgemm rotated over
  // --device cuda (membw_gbps is then a device-to-device copy's bytes read + written per second,
  // the same process, just before the shape's kernels; the blas_* yardstick is not run):
  std::string device;              // "cuda:0 NVIDIA H200"
  std::string requested_kernel;    // --kernel, "" for the registry's choice
  int copies = 0;                  // weight copies the timed calls rotated over (past the L2)
  double floor_s = 0.0;            // (weight_bytes + x + y bytes) / membw_gbps
  double ratio_floor = 0.0;        // median_s / floor_s (1.0 = at the bandwidth floor)
  double peer_bf16_s = 0.0;        // gpu_peers.py: torch.matmul bf16 (cuBLAS), 0 when not given
  double peer_tinygemm_s = 0.0;    // torch._weight_int4pack_mm g128
  double peer_fp8_tensor_s = 0.0;  // torch._scaled_mm per-tensor
  double peer_fp8_row_s = 0.0;     // torch._scaled_mm row-wise
  double speedup_bf16 = 0.0;       // peer_bf16_s / median_s
};

// The schemes `--scheme` accepts, and the default set.
std::vector<std::string> scheme_names();
std::vector<std::string> default_schemes();
// The problem of a scheme at a shape (fp8_mode left to the selector).
Result<LinearProblem> scheme_problem(std::string_view scheme, int64_t K, int64_t N,
                                     DType act_dtype);
// "K N label" lines; '#' starts a comment.
Result<std::vector<BenchShape>> read_shapes(const std::string& path);
// "4096x14336" -> {K=4096, N=14336}.
Result<BenchShape> parse_shape(std::string_view text);
// Random canonical weights of `problem` (codes uniform, scales 1e-3..1e-2, zeros and act-order
// as the problem says), filled in parallel: what a benchmark runs on.
Canonical random_canonical(const LinearProblem& problem, uint64_t seed);
// Checkpoint-sized bytes of the weights of `problem` (see BenchRecord::weight_bytes).
int64_t weight_bytes(const LinearProblem& problem);

// Read bandwidth in GB/s (1e9 bytes/s): every thread streams its part of a `bytes` buffer (the
// bench uses 256 MiB, 8x the L3, with huge pages like the kernels' prepared weights), median of
// `passes` passes that no other process preempted.
class BandwidthProbe {
 public:
  BandwidthProbe(int threads, int64_t bytes);
  double measure(int passes);

 private:
  int threads_;
  StreamedVector<uint64_t> buffer_;
};
double measure_memory_bandwidth(int threads, int passes, int64_t bytes);

// Runs the benchmark; `on_record` sees each record as soon as it is measured.
Result<std::vector<BenchRecord>> run_bench(
    const BenchOptions& options, const std::function<void(const BenchRecord&)>& on_record);

// One JSON object per record (the --json line), and a Markdown table of all of them.
std::string record_json(const BenchRecord& record);
std::string records_table(const std::vector<BenchRecord>& records);

}  // namespace qlinear::bench
