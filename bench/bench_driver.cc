#include "bench/bench_driver.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <sys/resource.h>
#include <time.h>
#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "convert/canonical.h"
#include "core/progress.h"
#include "core/tensor.h"
#include "kernels/device_context.h"
#include "kernels/kernel.h"
#include "kernels/select.h"
#include "qlinear/device.h"
#if defined(QLINEAR_BENCH_CUDA)
#include "kernels/cuda/runtime/cuda_bench.h"
#endif

namespace qlinear::bench {

namespace {

// Most f32 bytes the sgemm yardstick may hold at once (the 8192x57344 layer alone is 1.9 GB).
constexpr int64_t kBlasBudgetBytes = int64_t{3} << 30;

using Clock = std::chrono::steady_clock;

// Big buffers of the yardsticks get transparent huge pages, like the native kernels' prepared
// weights (core/memory.h), so the bandwidth and sgemm references are the best this
// machine streams, not a 4 KiB-page handicap.
template <class T>
using HugeVector = StreamedVector<T>;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// splitmix64: fast, seedable per block, so large random weights fill in parallel.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class Vector, class Fill>
void parallel_fill(Vector& out, uint64_t seed, Fill fill) {
  const int64_t n = static_cast<int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = fill(mix(seed ^ static_cast<uint64_t>(i)));
}

// A uniform float in [lo, hi) from the top 24 bits of r.
float unit(uint64_t r, float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(r >> 40) / static_cast<float>(1 << 24);
}

Canonical random_weights(const LinearProblem& p, uint64_t seed) {
  Canonical c;
  c.name = "bench";
  c.shard_sizes = {p.N};
  const int64_t K = p.K;
  const int64_t N = p.N;
  if (p.scheme == WeightScheme::kInt) {
    IntWeights w;
    w.bits = p.bits;
    w.K = K;
    w.N = N;
    w.group_size = p.group_size;
    w.num_groups = K / p.group_size;
    w.qweight.resize(static_cast<std::size_t>(K / w.pack_factor() * N));
    parallel_fill(w.qweight, seed, [](uint64_t r) { return static_cast<uint32_t>(r); });
    w.scales.resize(static_cast<std::size_t>(w.num_groups * N));
    // f16 values, as GPTQ / AWQ checkpoints store scales (kernels that keep the checkpoint's
    // precision then stream the bytes weight_bytes() counts).
    parallel_fill(w.scales, seed + 1,
                  [](uint64_t r) { return f16_to_f32(f32_to_f16(unit(r, 0.001f, 0.01f))); });
    if (p.has_zeros) {
      w.zeros.resize(w.scales.size());
      const uint32_t levels = 1u << p.bits;
      parallel_fill(w.zeros, seed + 2,
                    [levels](uint64_t r) { return static_cast<uint8_t>(r % levels); });
    }
    if (p.act_order) {
      std::vector<int32_t> order(static_cast<std::size_t>(K));
      std::iota(order.begin(), order.end(), 0);
      for (int64_t i = K - 1; i > 0; --i) {
        std::swap(order[i], order[mix(seed + i) % static_cast<uint64_t>(i + 1)]);
      }
      w.g_idx.resize(order.size());
      for (int64_t i = 0; i < K; ++i) w.g_idx[order[i]] = static_cast<int32_t>(i / p.group_size);
    }
    c.weights = std::move(w);
  } else if (p.scheme == WeightScheme::kFp8) {
    Fp8Weights w;
    w.K = K;
    w.N = N;
    w.granularity = p.fp8_weight;
    w.block_n = p.block_n;
    w.block_k = p.block_k;
    w.activation = p.act_quant;
    w.input_scale = 0.05f;
    w.qweight.resize(static_cast<std::size_t>(N * K));
    // Any code but the NaNs 0x7F / 0xFF.
    parallel_fill(w.qweight, seed, [](uint64_t r) {
      return static_cast<uint8_t>((r & 0xFF) == 0x7F || (r & 0xFF) == 0xFF ? 0x3F : r & 0xFF);
    });
    const int64_t scales =
        w.is_block() ? ((N + p.block_n - 1) / p.block_n) * ((K + p.block_k - 1) / p.block_k) : N;
    w.scale.resize(static_cast<std::size_t>(scales));
    parallel_fill(w.scale, seed + 1, [](uint64_t r) { return unit(r, 1e-4f, 1e-3f); });
    // Per-tensor checkpoints (one unfused shard) share one scale over all rows.
    if (p.fp8_weight == Fp8WeightGranularity::kTensor) {
      std::fill(w.scale.begin(), w.scale.end(), w.scale.front());
    }
    c.weights = std::move(w);
  } else {
    DenseWeights w;
    w.K = K;
    w.N = N;
    w.dtype = p.weight_dtype;
    const std::size_t elem = dtype_size(p.weight_dtype);
    std::vector<float> values(static_cast<std::size_t>(N * K));
    parallel_fill(values, seed, [](uint64_t r) { return unit(r, -0.05f, 0.05f); });
    w.data.resize(values.size() * elem);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (p.weight_dtype == DType::kF32) {
        std::memcpy(w.data.data() + i * elem, &values[i], elem);
      } else {
        const uint16_t bits =
            p.weight_dtype == DType::kBF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
        std::memcpy(w.data.data() + i * elem, &bits, elem);
      }
    }
    c.weights = std::move(w);
  }
  if (p.has_bias) {
    std::vector<float> bias(static_cast<std::size_t>(N));
    parallel_fill(bias, seed + 3, [](uint64_t r) { return unit(r, -1.0f, 1.0f); });
    std::visit([&bias](auto& w) { w.bias = bias; }, c.weights);
  }
  return c;
}

Result<Tensor> random_activations(DType dtype, int64_t M, int64_t K, uint64_t seed) {
  QL_ASSIGN_OR_RETURN(Tensor x, Tensor::allocate(dtype, {M, K}));
  std::vector<float> values(static_cast<std::size_t>(M * K));
  parallel_fill(values, seed, [](uint64_t r) { return unit(r, -2.0f, 2.0f); });
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::kF32:
        x.data_as<float>()[i] = values[i];
        break;
      case DType::kBF16:
        x.data_as<uint16_t>()[i] = f32_to_bf16(values[i]);
        break;
      default:
        x.data_as<uint16_t>()[i] = f32_to_f16(values[i]);
        break;
    }
  }
  return x;
}

int64_t rotation_copies(int64_t bytes_per_copy, int64_t target, int64_t budget) {
  int64_t copies = (target + bytes_per_copy - 1) / bytes_per_copy + 1;
  copies = std::min<int64_t>(copies, std::max<int64_t>(1, budget / bytes_per_copy));
  return std::clamp<int64_t>(copies, 1, 512);
}

// Involuntary context switches of all the process's threads (OpenMP and OpenBLAS workers
// included). A timed call during which this moved had a thread taken away by the OS (another
// process on a shared machine): its time says nothing about the kernel, so it is discarded.
// (CPU-time shares do not work for this: the kernel accounts a running worker thread's time
// lazily, so a 2-thread call under 4 ms reads as half the CPU it used; measured on this VM.)
long involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nivcsw;
}

struct Timing {
  double median_s = 0.0;
  int reps = 0;       // samples in the median
  int discarded = 0;  // samples dropped as preempted
};

// Times `call(i)` (i = the rotation index): one warm-up call, then repetitions until the time
// target is spent (at least 3; 2 when one call takes over half a second, 1 over two seconds, so
// the largest layers at M = 256 keep a full run within minutes). Preempted samples are replaced,
// up to three times the repetitions; if too few clean ones remain, the median takes them all.
template <class Call>
Result<Timing> time_calls(const Call& call, int64_t copies, bool quick) {
  int64_t index = 0;
  struct Sample {
    double seconds;
    bool clean;
  };
  auto timed = [&]() -> Result<Sample> {
    const long switches = involuntary_switches();
    const Clock::time_point start = Clock::now();
    QL_RETURN_IF_ERROR(call(index++ % copies));
    const double wall = seconds_since(start);
    return Sample{wall, involuntary_switches() == switches};
  };
  QL_ASSIGN_OR_RETURN(const Sample first, timed());
  const double target = quick ? 0.15 : 0.6;
  const int min_reps = first.seconds > 2.0 ? 1 : (first.seconds > 0.5 ? 2 : 3);
  const int reps =
      std::clamp(static_cast<int>(target / std::max(first.seconds, 1e-7)), min_reps, 300);
  std::vector<double> clean;
  std::vector<double> all;
  while (static_cast<int>(clean.size()) < reps && static_cast<int>(all.size()) < 3 * reps) {
    QL_ASSIGN_OR_RETURN(const Sample sample, timed());
    all.push_back(sample.seconds);
    if (sample.clean) clean.push_back(sample.seconds);
  }
  Timing timing;
  const std::vector<double>& used = static_cast<int>(clean.size()) >= min_reps ? clean : all;
  timing.median_s = median(used);
  timing.reps = static_cast<int>(used.size());
  timing.discarded = static_cast<int>(all.size() - clean.size());
  return timing;
}

struct BlasTiming {
  double median_s = 0.0;
  int copies = 0;
};

// cblas_sgemm y = x * W^T on f32 weights of the shape (sgemm's time does not depend on the
// values, so one random f32 set serves every scheme of the shape), per batch size.
Result<std::map<int64_t, BlasTiming>> time_blas(const BenchShape& shape,
                                                const std::vector<int64_t>& batches, int threads,
                                                bool quick, int64_t rotate_bytes) {
  const int64_t bytes = shape.K * shape.N * 4;
  const int64_t copies = rotation_copies(bytes, rotate_bytes, kBlasBudgetBytes);
  std::vector<HugeVector<float>> weights(static_cast<std::size_t>(copies));
  for (int64_t i = 0; i < copies; ++i) {
    weights[i].resize(static_cast<std::size_t>(shape.K * shape.N));
    parallel_fill(weights[i], 1000 + static_cast<uint64_t>(i),
                  [](uint64_t r) { return unit(r, -0.05f, 0.05f); });
  }
  openblas_set_num_threads(threads);
  std::map<int64_t, BlasTiming> out;
  for (int64_t M : batches) {
    QL_ASSIGN_OR_RETURN(const Tensor x, random_activations(DType::kF32, M, shape.K, 7));
    std::vector<float> y(static_cast<std::size_t>(M * shape.N));
    auto call = [&](int64_t i) -> Status {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M),
                  static_cast<int>(shape.N), static_cast<int>(shape.K), 1.0f, x.data_as<float>(),
                  static_cast<int>(shape.K), weights[i].data(), static_cast<int>(shape.K), 0.0f,
                  y.data(), static_cast<int>(shape.N));
      return Status::ok_status();
    };
    QL_ASSIGN_OR_RETURN(const Timing timing, time_calls(call, copies, quick));
    out[M] = {timing.median_s, static_cast<int>(copies)};
  }
  return out;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t stream_sum_avx2(const uint64_t* data, int64_t count) {
  __m256i a0 = _mm256_setzero_si256();
  __m256i a1 = a0;
  __m256i a2 = a0;
  __m256i a3 = a0;
  const int64_t step = 16;
  int64_t i = 0;
  for (; i + step <= count; i += step) {
    const auto* p = reinterpret_cast<const __m256i*>(data + i);
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(p));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(p + 1));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(p + 2));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(p + 3));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < count; ++i) sum += data[i];
  return sum;
}
#endif

uint64_t stream_sum(const uint64_t* data, int64_t count) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return stream_sum_avx2(data, count);
#endif
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    s0 += data[i];
    s1 += data[i + 1];
    s2 += data[i + 2];
    s3 += data[i + 3];
  }
  for (; i < count; ++i) s0 += data[i];
  return s0 + s1 + s2 + s3;
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

struct SchemeInfo {
  std::string_view name;
  std::string_view problem;  // LinearProblem grammar without K/N/a=
};

// int schemes as GPTQ/AWQ checkpoints ship them; fp8 as compressed-tensors / DeepSeek do;
// dense as safetensors store skipped layers.
constexpr SchemeInfo kSchemes[] = {
    {"w4a16g128", "int4:g128"},
    {"w4a16g32", "int4:g32"},
    {"w4a16g128-zp", "int4:g128:zp"},
    {"w4a16-ch", "int4:gK"},
    {"w8a16", "int8:g128"},
    {"w8a16-ch", "int8:gK"},
    // int8 activations: only run when asked for (never in the default set), as in a model.
    {"w4a8g128", "int4:g128:a8"},
    {"w8a8-int", "int8:g128:a8"},
    {"fp8-w8a16", "fp8:channel"},
    {"fp8-w8a8-token", "fp8:channel:dyn-token"},
    {"fp8-w8a8-static", "fp8:tensor:static-tensor"},
    {"fp8-w8a8-tensor", "fp8:tensor:dyn-tensor"},
    {"fp8-block-w8a16", "fp8:block128x128"},
    {"fp8-block-w8a8", "fp8:block128x128:dyn-group"},
    // Unquantized layers (the lm_head of AWQ/GPTQ checkpoints, unquantized models).
    {"dense-bf16", "dense:bf16"},
    {"dense-f16", "dense:f16"},
};

}  // namespace

Canonical random_canonical(const LinearProblem& problem, uint64_t seed) {
  return random_weights(problem, seed);
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> names;
  for (const auto& s : kSchemes) names.emplace_back(s.name);
  return names;
}

std::vector<std::string> default_schemes() {
  return {"w4a16g128", "w8a16", "fp8-w8a16", "fp8-w8a8-token", "fp8-block-w8a8"};
}

Result<LinearProblem> scheme_problem(std::string_view scheme, int64_t K, int64_t N,
                                     DType act_dtype) {
  for (const auto& s : kSchemes) {
    if (s.name != scheme) continue;
    std::string text(s.problem);
    if (const auto pos = text.find("gK"); pos != std::string::npos) {
      text.replace(pos, 2, fmt::format("g{}", K));
    }
    text += fmt::format(":K{}:N{}:a={}", K, N, dtype_name(act_dtype));
    return LinearProblem::parse(text);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "--scheme \"{}\" is not a scheme; expected one of {}", scheme,
                    fmt::join(scheme_names(), ", "));
}

Result<BenchShape> parse_shape(std::string_view text) {
  const auto x = text.find('x');
  BenchShape shape;
  if (x != std::string_view::npos) {
    const std::string k(text.substr(0, x));
    const std::string n(text.substr(x + 1));
    char* end_k = nullptr;
    char* end_n = nullptr;
    shape.K = std::strtoll(k.c_str(), &end_k, 10);
    shape.N = std::strtoll(n.c_str(), &end_n, 10);
    if (!k.empty() && !n.empty() && *end_k == '\0' && *end_n == '\0' && shape.K > 0 &&
        shape.N > 0) {
      return shape;
    }
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "--shape \"{}\" is not KxN with positive integers (e.g. 4096x14336)", text);
}

Result<std::vector<BenchShape>> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return make_error(ErrorCode::kNotFound, "{}: cannot open the shapes file (pass --shape KxN)",
                      path);
  }
  std::vector<BenchShape> shapes;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    std::istringstream fields(text);
    BenchShape shape;
    if (!(fields >> shape.K >> shape.N) || shape.K <= 0 || shape.N <= 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}:{}: \"{}\" is not \"K N [label]\" with positive K and N", path, number,
                        text);
    }
    fields >> shape.label;
    shapes.push_back(shape);
  }
  if (shapes.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: no shapes (expected \"K N label\" lines)",
                      path);
  }
  return shapes;
}

int64_t weight_bytes(const LinearProblem& p) {
  const int64_t elems = p.K * p.N;
  switch (p.scheme) {
    case WeightScheme::kInt: {
      const int64_t groups = p.K / std::max(p.group_size, 1) * p.N;
      return elems * p.bits / 8 + groups * 2 + (p.has_zeros ? groups * p.bits / 8 : 0);
    }
    case WeightScheme::kFp8: {
      const int64_t scales =
          p.fp8_weight == Fp8WeightGranularity::kBlock
              ? ((p.N + p.block_n - 1) / p.block_n) * ((p.K + p.block_k - 1) / p.block_k)
              : p.N;
      return elems + scales * 4;
    }
    case WeightScheme::kDense:
      return elems * static_cast<int64_t>(dtype_size(p.weight_dtype));
  }
  return elems;
}

BandwidthProbe::BandwidthProbe(int threads, int64_t bytes)
    : threads_(threads > 0 ? threads : omp_get_max_threads()),
      buffer_(static_cast<std::size_t>(std::max<int64_t>(bytes / 8, 1024))) {
  // Touched by the threads that will stream it (first touch places the pages).
  uint64_t* data = buffer_.data();
  const int64_t count = static_cast<int64_t>(buffer_.size());
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<uint64_t>(i);
}

double BandwidthProbe::measure(int passes) {
  const uint64_t* data = buffer_.data();
  const int64_t count = static_cast<int64_t>(buffer_.size());
  std::vector<double> rates;
  std::vector<double> all_rates;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 3 * passes && static_cast<int>(rates.size()) < passes; ++pass) {
    uint64_t total = 0;
    const long switches = involuntary_switches();
    const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads_) reduction(+ : total)
    {
      // Each thread streams one contiguous slice, aligned to 64 elements.
      const int64_t nthreads = omp_get_num_threads();
      const int64_t id = omp_get_thread_num();
      const int64_t per = (count / nthreads) / 64 * 64;
      const int64_t begin = id * per;
      const int64_t end = id == nthreads - 1 ? count : begin + per;
      total += stream_sum(data + begin, end - begin);
    }
    const double wall = seconds_since(start);
    const double rate = static_cast<double>(count * 8) / wall / 1e9;
    all_rates.push_back(rate);
    // As in time_calls: a preempted pass measures the other process, not the memory.
    if (involuntary_switches() == switches) rates.push_back(rate);
    sink = sink + total;
  }
  return median(rates.empty() ? all_rates : rates);
}

double measure_memory_bandwidth(int threads, int passes, int64_t bytes) {
  return BandwidthProbe(threads, bytes).measure(passes);
}

#if defined(QLINEAR_BENCH_CUDA)
namespace {

// gpu_peers.py's rows by (K, N, M).
struct PeerRow {
  double bf16_s = 0, tinygemm_s = 0, fp8_tensor_s = 0, fp8_row_s = 0;
};
Result<std::map<std::tuple<int64_t, int64_t, int64_t>, PeerRow>> read_peers(
    const std::string& path) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, PeerRow> rows;
  if (path.empty()) return rows;
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::kNotFound, "--peers {}: cannot open the file", path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kCorrupt, "--peers {}: not JSON: {}", path, e.what());
  }
  for (const auto& r : j.value("rows", nlohmann::json::array())) {
    PeerRow p;
    p.bf16_s = r.value("bf16_s", 0.0);
    p.tinygemm_s = r.value("w4a16_tinygemm_s", 0.0);
    p.fp8_tensor_s = r.value("fp8_tensor_s", 0.0);
    p.fp8_row_s = r.value("fp8_row_s", 0.0);
    rows[{r.value("K", int64_t{0}), r.value("N", int64_t{0}), r.value("M", int64_t{0})}] = p;
  }
  return rows;
}

Result<Tensor> device_activations(DeviceContext& ctx, DType dtype, int64_t M, int64_t K,
                                  uint64_t seed) {
  QL_ASSIGN_OR_RETURN(const Tensor host, random_activations(dtype, M, K, seed));
  QL_ASSIGN_OR_RETURN(Tensor x, Tensor::allocate(dtype, {M, K}, ctx.allocator()));
  QL_RETURN_IF_ERROR(ctx.upload(x.data(), 0, host.data(), host.nbytes()));
  return x;
}

}  // namespace

// The GPU bench: the same schemes, shapes and batches; per call GPU time from CUDA events (calls
// queued behind a spin kernel, so launch overhead is the GPU's only), weights rotated over copies
// that exceed rotate_bytes (past the 60 MB L2), the device-to-device copy bandwidth of this process
// measured before each shape, and gpu_peers.py's times joined by (K, N, M).
Result<std::vector<BenchRecord>> run_bench_cuda(
    const BenchOptions& options, const Device& device, const SelectionPolicy& policy,
    const std::vector<std::pair<std::string, std::optional<LinearProblem>>>& schemes,
    const std::vector<BenchShape>& shapes, const std::vector<int64_t>& batches,
    const std::function<void(const BenchRecord&)>& on_record) {
  QL_ASSIGN_OR_RETURN(DeviceContext * ctx, device_context(device));
  QL_ASSIGN_OR_RETURN(const auto peers, read_peers(options.peers_path));
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  const int reps = options.quick ? 20 : 50;
  const int64_t rotate_bytes = options.rotate_bytes;
  Progress progress("bench", shapes.size() * schemes.size() * batches.size(), options.progress);
  std::vector<BenchRecord> records;
  for (const BenchShape& shape : shapes) {
    QL_ASSIGN_OR_RETURN(const double membw,
                        cuda_bench::copy_bandwidth_gbps(device.index, std::size_t{1} << 30, 5));
    for (const auto& [scheme, given] : schemes) {
      LinearProblem problem;
      if (given) {
        problem = *given;
      } else {
        QL_ASSIGN_OR_RETURN(problem, scheme_problem(scheme, shape.K, shape.N, options.act_dtype));
        problem.out_dtype = options.out_dtype;
      }
      problem.m_min = 1;
      problem.m_max = max_batch;
      const Canonical weights = random_canonical(problem, 42);
      const int64_t bytes = weight_bytes(problem);
      const int64_t copies = rotation_copies(bytes, rotate_bytes, int64_t{8} << 30);
      std::vector<Linear> prepared;
      for (int64_t i = 0; i < copies; ++i) {
        QL_ASSIGN_OR_RETURN(Linear linear,
                            Linear::create_for_problem(weights, problem, device, policy, "bench"));
        prepared.push_back(std::move(linear));
      }
      QL_ASSIGN_OR_RETURN(
          Tensor workspace,
          Tensor::allocate(DType::kU8,
                           {static_cast<int64_t>(prepared.front().workspace_bytes(max_batch)) + 1},
                           ctx->allocator()));
      for (int64_t M : batches) {
        QL_ASSIGN_OR_RETURN(const Tensor x,
                            device_activations(*ctx, problem.act_dtype, M, shape.K, 11));
        QL_ASSIGN_OR_RETURN(Tensor y,
                            Tensor::allocate(problem.out_dtype, {M, shape.N}, ctx->allocator()));
        ExecContext ectx;
        ectx.workspace = {workspace.data(), workspace.nbytes(), ctx->location()};
        auto call = [&](int i) {
          return prepared[static_cast<std::size_t>(i % copies)].run(x.matrix(), y.matrix(), ectx);
        };
        // Warm-up: every copy once (lazy initialisation, cuBLASLt's first launches).
        for (int64_t i = 0; i < copies; ++i) QL_RETURN_IF_ERROR(call(static_cast<int>(i)));
        QL_RETURN_IF_ERROR(ctx->synchronize());
        QL_ASSIGN_OR_RETURN(
            std::vector<double> times,
            cuda_bench::time_calls(device.index, ctx->default_stream(), reps, call));
        const LinearBucket& bucket = prepared.front().bucket_for(M);
        BenchRecord r;
        r.scheme = scheme;
        r.label = shape.label;
        r.K = shape.K;
        r.N = shape.N;
        r.M = M;
        r.kernel = bucket.kernel;
        r.engine = bucket.engine;
        r.problem = bucket.problem;
        r.median_s = median(times);
        r.reps = reps;
        r.weight_bytes = bytes;
        r.gbps = static_cast<double>(bytes) / r.median_s / 1e9;
        r.gflops = 2.0 * static_cast<double>(M * shape.K * shape.N) / r.median_s / 1e9;
        r.membw_gbps = membw;
        r.membw_before_gbps = membw;
        r.membw_after_gbps = membw;
        r.ratio_membw = r.gbps / membw;
        r.device = device.name;
        r.requested_kernel = options.kernel;
        r.copies = static_cast<int>(copies);
        const double io_bytes =
            static_cast<double>(M) * (static_cast<double>(shape.K) * dtype_size(problem.act_dtype) +
                                      static_cast<double>(shape.N) * dtype_size(problem.out_dtype));
        r.floor_s = (static_cast<double>(bytes) + io_bytes) / (membw * 1e9);
        r.ratio_floor = r.median_s / r.floor_s;
        if (const auto it = peers.find({shape.K, shape.N, M}); it != peers.end()) {
          r.peer_bf16_s = it->second.bf16_s;
          r.peer_tinygemm_s = it->second.tinygemm_s;
          r.peer_fp8_tensor_s = it->second.fp8_tensor_s;
          r.peer_fp8_row_s = it->second.fp8_row_s;
          if (r.peer_bf16_s > 0) r.speedup_bf16 = r.peer_bf16_s / r.median_s;
        }
        records.push_back(r);
        if (on_record) on_record(r);
        progress.advance(1);
      }
    }
  }
  progress.finish();
  return records;
}
#endif

Result<std::vector<BenchRecord>> run_bench(
    const BenchOptions& options, const std::function<void(const BenchRecord&)>& on_record) {
  QL_ASSIGN_OR_RETURN(const Device device, detect_device(options.device));
  if (device.platform != Platform::kCpu && device.platform != Platform::kCuda &&
      device.platform != Platform::kOpenCl) {
    return make_error(ErrorCode::kUnsupported,
                      "--device {}: qlinear bench times CPU, CUDA and OpenCL kernels",
                      options.device);
  }
  const char* disabled = std::getenv("QLINEAR_DISABLED_KERNELS");
  QL_ASSIGN_OR_RETURN(const SelectionPolicy policy,
                      make_policy(options.backend, options.kernel, disabled ? disabled : ""));
  const int threads = options.threads > 0 ? options.threads : device.cores;
  std::vector<int64_t> batches = options.batches;
  if (batches.empty()) batches = {1, 4, 16, 64, 256};
  for (int64_t M : batches) {
    if (M <= 0) return make_error(ErrorCode::kInvalidArgument, "--batch {}: must be > 0", M);
  }
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());

  // (scheme label, problem template) pairs and the shapes to run them on.
  std::vector<std::pair<std::string, std::optional<LinearProblem>>> schemes;
  std::vector<BenchShape> shapes = options.shapes;
  if (!options.problem.empty()) {
    QL_ASSIGN_OR_RETURN(LinearProblem p, LinearProblem::parse(options.problem));
    shapes = {{p.K, p.N, ""}};
    schemes.emplace_back(p.scheme_string(), p);
  } else {
    std::vector<std::string> names = options.schemes;
    if (names.empty()) names = default_schemes();
    for (const std::string& name : names) {
      QL_RETURN_IF_ERROR(scheme_problem(name, 128, 128, options.act_dtype).status());
      schemes.emplace_back(name, std::nullopt);
    }
    if (shapes.empty()) {
      QL_ASSIGN_OR_RETURN(shapes, read_shapes(options.shapes_path));
    }
  }

  if (device.platform == Platform::kCuda) {
#if defined(QLINEAR_BENCH_CUDA)
    return run_bench_cuda(options, device, policy, schemes, shapes, batches, on_record);
#else
    return make_error(ErrorCode::kUnsupported, "--device {}: built without QLINEAR_WITH_CUDA",
                      options.device);
#endif
  }
  // On an OpenCL device x, y and the workspace live in its memory and each timed call waits for
  // the queue; the bandwidth yardstick and the OpenBLAS column are the host's, so they are left
  // out there (0).
  const bool on_host = device.platform == Platform::kCpu;
  QL_ASSIGN_OR_RETURN(DeviceContext * context, device_context(device));
  const Allocator& memory = context->allocator();
  const int64_t rotate_bytes = options.quick ? options.rotate_bytes / 2 : options.rotate_bytes;
  // Measured right before and right after each record's kernel timing: on a shared (virtual)
  // machine the bandwidth moves within seconds (20-55 GB/s here), and a ratio against a number
  // from another moment would move with it.
  BandwidthProbe probe(std::max(threads, 1), on_host ? options.membw_bytes : int64_t{1} << 20);
  const int probe_passes = options.quick ? 2 : 3;
  Progress progress("bench", shapes.size() * schemes.size() * batches.size(), options.progress);
  std::vector<BenchRecord> records;
  for (const BenchShape& shape : shapes) {
    std::map<int64_t, BlasTiming> blas;
    if (options.blas && on_host) {
      QL_ASSIGN_OR_RETURN(blas, time_blas(shape, batches, threads, options.quick, rotate_bytes));
      // Let OpenBLAS's worker threads stop spinning before OpenMP takes the cores.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (const auto& [scheme, given] : schemes) {
      LinearProblem problem;
      if (given) {
        problem = *given;
      } else {
        QL_ASSIGN_OR_RETURN(problem, scheme_problem(scheme, shape.K, shape.N, options.act_dtype));
        problem.out_dtype = options.out_dtype;
      }
      problem.m_min = 1;
      problem.m_max = max_batch;
      const Canonical weights = random_weights(problem, 42);
      const int64_t bytes = weight_bytes(problem);
      const int64_t copies = rotation_copies(bytes, rotate_bytes, rotate_bytes * 4);
      std::vector<Linear> prepared;
      for (int64_t i = 0; i < copies; ++i) {
        QL_ASSIGN_OR_RETURN(Linear linear,
                            Linear::create_for_problem(weights, problem, device, policy, "bench"));
        prepared.push_back(std::move(linear));
      }
      const auto workspace_bytes = static_cast<int64_t>(
          std::max<std::size_t>(prepared.front().workspace_bytes(max_batch), 1));
      QL_ASSIGN_OR_RETURN(Tensor workspace,
                          Tensor::allocate(DType::kU8, {workspace_bytes}, memory));
      for (int64_t M : batches) {
        QL_ASSIGN_OR_RETURN(const Tensor host_x,
                            random_activations(problem.act_dtype, M, shape.K, 11));
        QL_ASSIGN_OR_RETURN(Tensor x, Tensor::allocate(problem.act_dtype, host_x.shape(), memory));
        QL_RETURN_IF_ERROR(context->upload(x.data(), 0, host_x.data(), host_x.nbytes()));
        QL_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(problem.out_dtype, {M, shape.N}, memory));
        ExecContext ctx;
        ctx.threads = threads;
        ctx.stream = context->default_stream();
        ctx.workspace = {workspace.data(), workspace.nbytes(), memory.location()};
        auto call = [&](int64_t i) -> Status {
          QL_RETURN_IF_ERROR(prepared[i].run(x.matrix(), y.matrix(), ctx));
          return on_host ? Status::ok_status() : context->synchronize(ctx.stream);
        };
        const LinearBucket& bucket = prepared.front().bucket_for(M);
        const double membw_before = on_host ? probe.measure(probe_passes) : 0.0;
        QL_ASSIGN_OR_RETURN(const Timing timing, time_calls(call, copies, options.quick));
        const double membw_after = on_host ? probe.measure(probe_passes) : 0.0;
        BenchRecord r;
        r.scheme = scheme;
        r.label = shape.label;
        r.K = shape.K;
        r.N = shape.N;
        r.M = M;
        r.kernel = bucket.kernel;
        r.engine = bucket.engine;
        r.problem = bucket.problem;
        r.median_s = timing.median_s;
        r.reps = timing.reps;
        r.discarded = timing.discarded;
        r.weight_bytes = bytes;
        r.gbps = static_cast<double>(bytes) / r.median_s / 1e9;
        r.gflops = 2.0 * static_cast<double>(M * shape.K * shape.N) / r.median_s / 1e9;
        r.membw_before_gbps = membw_before;
        r.membw_after_gbps = membw_after;
        r.membw_gbps = 0.5 * (membw_before + membw_after);
        r.ratio_membw = r.membw_gbps > 0.0 ? r.gbps / r.membw_gbps : 0.0;
        if (const auto it = blas.find(M); it != blas.end()) {
          r.blas_median_s = it->second.median_s;
          r.ratio_blas = r.blas_median_s / r.median_s;
          r.blas_copies = it->second.copies;
        }
        records.push_back(r);
        if (on_record) on_record(r);
        progress.advance(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  progress.finish();
  return records;
}

std::string record_json(const BenchRecord& r) {
  nlohmann::ordered_json j;
  j["scheme"] = r.scheme;
  j["label"] = r.label;
  j["K"] = r.K;
  j["N"] = r.N;
  j["M"] = r.M;
  j["kernel"] = r.kernel;
  j["engine"] = r.engine;
  j["problem"] = r.problem;
  j["median_s"] = r.median_s;
  j["reps"] = r.reps;
  j["discarded"] = r.discarded;
  j["weight_bytes"] = r.weight_bytes;
  j["gbps"] = r.gbps;
  j["gflops"] = r.gflops;
  j["membw_gbps"] = r.membw_gbps;
  j["ratio_membw"] = r.ratio_membw;
  j["membw_before_gbps"] = r.membw_before_gbps;
  j["membw_after_gbps"] = r.membw_after_gbps;
  j["blas_median_s"] = r.blas_median_s;
  j["ratio_blas"] = r.ratio_blas;
  j["blas_copies"] = r.blas_copies;
  if (!r.device.empty()) {
    j["device"] = r.device;
    j["requested_kernel"] = r.requested_kernel;
    j["copies"] = r.copies;
    j["floor_s"] = r.floor_s;
    j["ratio_floor"] = r.ratio_floor;
    j["peer_bf16_s"] = r.peer_bf16_s;
    j["peer_tinygemm_s"] = r.peer_tinygemm_s;
    j["peer_fp8_tensor_s"] = r.peer_fp8_tensor_s;
    j["peer_fp8_row_s"] = r.peer_fp8_row_s;
    j["speedup_bf16"] = r.speedup_bf16;
  }
  return j.dump();
}

std::string records_table(const std::vector<BenchRecord>& records) {
  if (!records.empty() && !records.front().device.empty()) {
    std::string out =
        "| scheme | shape (KxN) | M | kernel | median us | GB/s | x floor | TFLOP/s | bf16 cuBLAS "
        "us | x bf16 |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
    for (const BenchRecord& r : records) {
      out +=
          fmt::format("| {} | {}x{}{} | {} | {} | {:.1f} | {:.0f} | {:.2f} | {:.1f} | {} | {} |\n",
                      r.scheme, r.K, r.N, r.label.empty() ? "" : fmt::format(" {}", r.label), r.M,
                      r.kernel, r.median_s * 1e6, r.gbps, r.ratio_floor, r.gflops / 1e3,
                      r.peer_bf16_s > 0 ? fmt::format("{:.1f}", r.peer_bf16_s * 1e6) : "-",
                      r.peer_bf16_s > 0 ? fmt::format("{:.2f}", r.speedup_bf16) : "-");
    }
    return out;
  }
  std::string out =
      "| scheme | shape (KxN) | M | kernel | median ms | GB/s | x membw | GFLOP/s | sgemm ms | "
      "x sgemm |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (const BenchRecord& r : records) {
    out += fmt::format("| {} | {}x{}{} | {} | {} | {:.3f} | {:.1f} | {:.2f} | {:.1f} | {} | {} |\n",
                       r.scheme, r.K, r.N, r.label.empty() ? "" : fmt::format(" {}", r.label), r.M,
                       r.engine.empty() ? r.kernel : fmt::format("{} [{}]", r.kernel, r.engine),
                       r.median_s * 1e3, r.gbps, r.ratio_membw, r.gflops,
                       r.blas_median_s > 0 ? fmt::format("{:.3f}", r.blas_median_s * 1e3) : "-",
                       r.blas_median_s > 0 ? fmt::format("{:.2f}", r.ratio_blas) : "-");
  }
  return out;
}

}  // namespace qlinear::bench
