// The shared half of the native CPU integer kernels: check(), the load-time repack into 64-column
// tiles, the per-call activation rows, and the OpenMP job runner (see int_tiles.h).
#include "kernels/cpu/int_tiles.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "kernels/common/engines.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/thread_budget.h"
#include "qlinear/dtype.h"

namespace qlinear::int_tiles {
namespace {

// What an ISA adds to every 4-bit field it decodes: the avx512 path turns a field f into the
// bf16 number 128 + f (one OR), so the zero term absorbs 128 per field; an 8-bit code is two
// fields, lo + 16*hi, so it absorbs 128 * 17.
float zero_offset(Isa isa, int bits) {
  if (isa != Isa::kAvx512 && isa != Isa::kAmx) return 0.0f;
  return bits == 4 ? kAvx512Offset4 : kAvx512Offset8;
}

// Rows per job of the panel and AMX engines: as many as fit kPanelMaxRows (the decode of a tile's
// chunk is shared by all of them), split further while there are fewer than 4 jobs per thread;
// a multiple of `block`, the engine's row block (panel: 6, even so hi/lo pairs stay in one job;
// AMX: 16, a tile's rows, so only a job's last block is partial).
int64_t job_rows(int64_t rows, int64_t tiles, int threads, int64_t block) {
  int64_t chunks = (rows + kPanelMaxRows - 1) / kPanelMaxRows;
  const int64_t blocks = (rows + block - 1) / block;
  while (chunks < blocks && tiles * chunks < 4 * int64_t{threads}) ++chunks;
  const int64_t per = (rows + chunks - 1) / chunks;
  return (per + block - 1) / block * block;
}
constexpr int64_t kPanelRowBlock = 6;
constexpr int64_t kAmxRowBlock = 16;
static_assert(kPanelMaxRows % kAmxRowBlock == 0, "AMX jobs are whole blocks of 16 rows");
// The most rows a panel or AMX job can get from job_rows (the ytile size it needs).
constexpr int64_t kPanelRowChunkMax =
    (kPanelMaxRows + kPanelRowBlock - 1) / kPanelRowBlock * kPanelRowBlock;

// f32 per code field for the avx2 and generic paths: values[r, d, i] = x[d*F + i] for the
// F = 32/bits fields of word d (stride 8). avx2 decodes field i < F-1 as
// (word & mask << bits*i) without the shift, so its x carries 2^-bits*i.
Rows rows_f32(const TiledWeights& w, const float* x, int64_t M, bool unshifted, float* values,
              float* sums) {
  Rows rows;
  rows.count = M;
  rows.values = values;
  rows.sums = sums;
  std::fill(values, values + M * w.steps * 8, 0.0f);
  const int64_t K = w.K;
  const int64_t group_size = K / w.groups;
  const int fields = 32 / w.bits;
  for (int64_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    float* dst = values + m * w.steps * 8;
    for (int64_t d = 0; d < w.steps; ++d) {
      for (int i = 0; i < fields; ++i) {
        const float shift = unshifted && i < fields - 1 ? std::ldexp(1.0f, -w.bits * i) : 1.0f;
        dst[d * 8 + i] = shift * src[d * fields + i];
      }
    }
    for (int64_t g = 0; g < w.groups; ++g) {
      double sum = 0.0;
      for (int64_t k = g * group_size; k < (g + 1) * group_size; ++k) sum += src[k];
      sums[m * w.groups + g] = static_cast<float>(sum);
    }
  }
  return rows;
}

// Runs `job` over (tile, row chunk) pairs and writes y = ytile + bias for the valid columns.
// Chunks of row_chunk rows (a multiple of 2); `dynamic`: jobs handed out one at a time (long
// jobs on a shared machine), else a static split.
void run_tiles(const TiledWeights& w, const Rows& rows, MatrixView y, int threads, TileJob job,
               float* ytiles, int64_t row_chunk = kRowChunk, bool dynamic = false) {
  for_each_tile_job(
      w, rows.count, rows.rows_per_out, y, threads,
      [&](int64_t tile, int64_t r0, int64_t r1, float* ytile) {
        job(w, rows, tile, r0, r1, ytile);
      },
      row_chunk, ytiles, dynamic);
}

// How one call of M rows runs: the engine and, for avx512, whether rows are split into bf16
// hi + lo (f32 always, f16 only where the second pass is free) and so R, the rows it feeds.
struct CallPlan {
  std::string_view engine;  // "inline", "panel", or "" for the generic kernel
  bool split = false;
  int64_t R = 0;
};

CallPlan plan_call(Isa isa, int bits, DType act, int64_t M) {
  CallPlan plan;
  plan.R = M;
  switch (isa) {
    case Isa::kGeneric:
      break;
    case Isa::kAvx2:
      plan.engine = M >= kAvx2PanelMinRows ? "panel" : "inline";
      break;
    case Isa::kAvx512:
    case Isa::kAmx:
      // f32 keeps ~f32 accuracy at every M; f16 is exact as hi + lo but pays the second pass only
      // where it is free (decode); bf16 is exact as is. AMX runs every M it takes
      // (>= kAmxMinRows) on tiles.
      plan.split = act == DType::kF32 || (act == DType::kF16 && M <= kSplitMaxM);
      plan.R = plan.split ? 2 * M : M;
      if (isa == Isa::kAmx) {
        plan.engine = "amx";
      } else {
        plan.engine = plan.R >= (bits == 4 ? kPanelMinRows4 : kPanelMinRows8) ? "panel" : "inline";
      }
      break;
  }
  return plan;
}

// Act-order rows grouped by g_idx: for each group present, in ascending order, its rows
// (stably) padded with -1 to group_size rows; `groups` gets the checkpoint group of each block.
Result<std::vector<int32_t>> grouped_rows(const IntWeights& w, std::vector<int32_t>& groups,
                                          std::string_view kernel, const Canonical& weights) {
  std::vector<int32_t> order(static_cast<size_t>(w.K));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return w.g_idx[a] < w.g_idx[b]; });
  std::vector<int32_t> perm;
  perm.reserve(order.size());
  for (std::size_t i = 0; i < order.size();) {
    const int32_t g = w.g_idx[order[i]];
    std::size_t j = i;
    while (j < order.size() && w.g_idx[order[j]] == g) ++j;
    if (static_cast<int64_t>(j - i) > w.group_size) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: layer \"{}\": g_idx assigns {} rows to group {}, more than "
                        "group_size={}",
                        kernel, weights.name, j - i, g, w.group_size);
    }
    perm.insert(perm.end(), order.begin() + static_cast<std::ptrdiff_t>(i),
                order.begin() + static_cast<std::ptrdiff_t>(j));
    perm.resize(perm.size() + static_cast<std::size_t>(w.group_size - static_cast<int64_t>(j - i)),
                -1);
    groups.push_back(g);
    i = j;
  }
  return perm;
}

// f16 when every scale survives f32 -> f16 -> f32 unchanged, else bf16 when every one survives
// that, else f32 (NaN scales never get here: the converters reject them).
DType narrowest_scale_dtype(const std::vector<float>& scales) {
  const auto exact = [&](auto to, auto from) {
    return std::all_of(scales.begin(), scales.end(), [&](float s) { return from(to(s)) == s; });
  };
  if (exact(f32_to_f16, f16_to_f32)) return DType::kF16;
  if (exact(f32_to_bf16, bf16_to_f32)) return DType::kBF16;
  return DType::kF32;
}

class TiledLinear final : public PreparedLinear {
 public:
  TiledLinear(const LinearProblem& problem, std::string_view name, Isa isa, TiledWeights w)
      : PreparedLinear(problem, Location::host()), name_(name), isa_(isa), w_(std::move(w)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, plan_call(isa_, w_.bits, problem().act_dtype, m), m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    const CallPlan plan = plan_call(isa_, w_.bits, x.dtype(), M);
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, plan, M);
    if (carver.overflowed()) return workspace_overflow(name_);
    // Shared fairly with concurrent calls; the job count bounds the threads again in run_tiles.
    const ThreadBudget budget(ctx.threads, w_.tiles * M);
    const int threads = budget.threads();
#if defined(__x86_64__)
    if (isa_ == Isa::kAvx512 || isa_ == Isa::kAmx) {
      // bf16 rows straight from x (no f32 copy); the AMX engine reads the panel engine's rows.
      const bool amx = plan.engine == "amx";
      const bool panel = plan.engine == "panel" || amx;
      const Rows rows =
          build_rows_avx512(w_, x, plan.split, panel, threads, b.pairs, b.sums, b.hb, b.permuted);
      if (amx) {
        run_tiles(w_, rows, y, threads, tile_job_panel_amx, b.ytiles,
                  job_rows(plan.R, w_.tiles, threads, kAmxRowBlock), true);
      } else if (panel) {
        run_tiles(w_, rows, y, threads, tile_job_panel_avx512, b.ytiles,
                  job_rows(plan.R, w_.tiles, threads, kPanelRowBlock), true);
      } else {
        run_tiles(w_, rows, y, threads, tile_job_avx512, b.ytiles);
      }
      return Status::ok_status();
    }
#endif
    const float* xs = rows_in_k_order(x, w_, b.xf, b.permuted);
    switch (isa_) {
      case Isa::kGeneric:
        run_tiles(w_, rows_f32(w_, xs, M, false, b.values, b.sums), y, threads, tile_job_generic,
                  b.ytiles);
        break;
#if defined(__x86_64__)
      case Isa::kAvx2:
        if (plan.engine == "panel") {
          Rows plain;
          plain.count = M;
          plain.values = xs;
          // As the avx512 panel: a job's rows share its tile's decode (M = 128: one job per
          // tile, where the fixed 96-row chunks decoded every tile twice).
          run_tiles(w_, plain, y, threads, tile_job_panel_avx2, b.ytiles,
                    job_rows(M, w_.tiles, threads, kPanelRowBlock), true);
        } else {
          run_tiles(w_, rows_f32(w_, xs, M, true, b.values, b.sums), y, threads, tile_job_avx2,
                    b.ytiles);
        }
        break;
#endif
      default:
        return make_error(ErrorCode::kInternal, "{}: ISA variant not compiled", name_);
    }
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;        // x as f32 [M, K] (avx2, generic)
    float* permuted = nullptr;  // act-order: x[:, perm] [M, K], or per-thread rows (avx512)
    float* values = nullptr;    // rows_f32 values
    float* sums = nullptr;      // [R, groups]
    uint32_t* pairs = nullptr;  // avx512 rows
    uint16_t* hb = nullptr;     // avx512: a bf16 row per thread
    float* ytiles = nullptr;    // a job's output tile per thread
  };

  // The call's buffers, in one order for workspace_bytes() and do_run().
  Buffers carve(WorkspaceCarver& c, const CallPlan& plan, int64_t M) const {
    Buffers b;
    const int64_t slots = max_threads();
    const int64_t K = w_.K;
    if (isa_ == Isa::kAvx512 || isa_ == Isa::kAmx) {
      const bool panel = plan.engine == "panel" || plan.engine == "amx";
      const Avx512RowsShape shape = avx512_rows_shape(w_, M, plan.split, panel);
      b.pairs = c.take<uint32_t>(shape.count * shape.stored);
      b.sums = c.take<float>(shape.count * w_.groups);
      b.hb = c.take<uint16_t>(slots * K);
      if (!w_.perm.empty()) b.permuted = c.take<float>(slots * K);
      b.ytiles = c.take<float>(slots * (panel ? kPanelRowChunkMax : kRowChunk) * kTileN);
      return b;
    }
    b.xf = c.take<float>(M * w_.k_in);
    if (!w_.perm.empty()) b.permuted = c.take<float>(M * K);
    if (plan.engine != "panel") {
      b.values = c.take<float>(M * w_.steps * 8);
      b.sums = c.take<float>(M * w_.groups);
    }
    b.ytiles =
        c.take<float>(slots * (plan.engine == "panel" ? kPanelRowChunkMax : kRowChunk) * kTileN);
    return b;
  }

  std::string_view name_;
  Isa isa_;
  TiledWeights w_;
};

}  // namespace

std::string_view missing_isa(Isa isa, const CpuFeatures& cpu) {
  switch (isa) {
    case Isa::kGeneric:
      return {};
    case Isa::kAvx2:
      if (!cpu.avx2) return "avx2";
      if (!cpu.fma) return "fma";
      if (!cpu.f16c) return "f16c";  // f16 scales (every AVX2 CPU has it)
      return {};
    case Isa::kAvx512:
      if (!cpu.avx512f) return "avx512f";
      if (!cpu.avx512bw) return "avx512bw";
      if (!cpu.avx512vl) return "avx512vl";
      if (!cpu.avx512_bf16) return "avx512_bf16";
      return {};
    case Isa::kAmx:
      if (std::string_view gap = missing_isa(Isa::kAvx512, cpu); !gap.empty()) return gap;
      if (!cpu.amx) return "amx (amx_tile and amx_bf16, enabled by the OS)";
      return {};
  }
  return {};
}

bool isa_compiled(Isa isa) {
#if defined(__x86_64__)
  (void)isa;
  return true;
#else
  return isa == Isa::kGeneric;
#endif
}

Verdict require_isa(Isa isa, const CpuFeatures& cpu) {
  if (!isa_compiled(isa)) {
    return Verdict::reject(Reason::kNotCompiled, "x86 ISA variants are built on x86-64 only");
  }
  if (std::string_view gap = missing_isa(isa, cpu); !gap.empty()) {
    return Verdict::reject(Reason::kMissingIsa, fmt::format("needs {}", gap));
  }
  return Verdict::accept();
}

Verdict require_tile_groups(const LinearProblem& problem, int multiple, std::string_view unit) {
  if (problem.group_size <= 0 || problem.group_size % multiple != 0) {
    return Verdict::reject(
        Reason::kGroupSize,
        fmt::format("group_size={} not a multiple of {} ({})", problem.group_size, multiple, unit));
  }
  // Act-order pads each group to group_size rows (int_tiles.h), so a ragged K is fine there.
  if (!problem.act_order && problem.K % problem.group_size != 0) {
    return Verdict::reject(Reason::kGroupSize, fmt::format("group_size={} does not divide K={}",
                                                           problem.group_size, problem.K));
  }
  return Verdict::accept();
}

Verdict IntTileKernel::check(const LinearProblem& problem, const Device& device) const {
  QL_REQUIRE(require_platform(device, Platform::kCpu));
  if (!isa_compiled(isa_)) {
    return Verdict::reject(Reason::kNotCompiled, "x86 ISA variants are built on x86-64 only");
  }
  if (std::string_view gap = missing_isa(isa_, device.cpu); !gap.empty()) {
    return Verdict::reject(Reason::kMissingIsa, fmt::format("needs {}", gap));
  }
  QL_REQUIRE(require_scheme(problem, WeightScheme::kInt));
  const bool bits_ok =
      bits_ == 0 ? (problem.bits == 4 || problem.bits == 8) : problem.bits == bits_;
  if (!bits_ok) {
    return Verdict::reject(Reason::kBits,
                           fmt::format("bits={}; needs {}", problem.bits,
                                       bits_ == 0 ? "4 or 8" : fmt::format("{}", bits_)));
  }
  QL_REQUIRE(require_int_activations(problem, /*int8_kernel=*/false));
  QL_REQUIRE(require_io_dtypes(problem));
  QL_REQUIRE(require_tile_groups(problem, 32 / problem.bits, "rows per packed word"));
  if (isa_ == Isa::kAmx) {
    // A tile step is 16 pairs = 32 rows of K, and a group's scale applies to whole steps.
    QL_REQUIRE(require_tile_groups(problem, 32, "rows per AMX tile step"));
    QL_REQUIRE(require_m_range(problem, kAmxMinRows, std::numeric_limits<int64_t>::max()));
  }
  return Verdict::accept();
}

std::vector<int64_t> IntTileKernel::m_breakpoints() const {
  if (isa_ == Isa::kAmx) return {kAmxMinRows};
  return {};
}

std::vector<Engine> IntTileKernel::engines(const LinearProblem& problem) const {
  // Where plan_call may switch engines: the f16 split limit and the panel thresholds in rows R
  // (R = 2M when split).
  const std::vector<int64_t> switches = {kSplitMaxM + 1,           kAvx2PanelMinRows,
                                         (kPanelMinRows4 + 1) / 2, kPanelMinRows4,
                                         (kPanelMinRows8 + 1) / 2, kPanelMinRows8};
  return engines_over(problem, switches, [&](int64_t m) {
    return std::string(plan_call(isa_, problem.bits, problem.act_dtype, m).engine);
  });
}

const float* rows_in_k_order(ConstMatrixView x, const TiledWeights& w, float* xf, float* permuted) {
  rows_to_f32(x, 0, x.rows(), xf);
  if (w.perm.empty()) return xf;
  permute_columns(xf, x.rows(), w.k_in, w.perm, permuted);
  return permuted;
}

Result<TiledWeights> tile_for_kernel(const LinearKernel& kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device,
                                     bool int8_activations) {
  QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kernel.name()));
  LinearProblem actual = LinearProblem::from_canonical(weights);
  actual.int8_activations = int8_activations;
  actual.act_dtype = problem.act_dtype;
  actual.out_dtype = problem.out_dtype;
  actual.m_min = problem.m_min;
  actual.m_max = problem.m_max;
  if (Verdict v = kernel.check(actual, device.device()); !v.ok()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: layer \"{}\": {} ({})", kernel.name(),
                      weights.name, v.to_string(), actual.to_string());
  }
  return tile_int_weights(*w, 0.0f, kernel.name(), weights);
}

void split_tile_passes(TiledWeights& w, int64_t pass_cols) {
  if (pass_cols == w.pass_cols) return;
  const int64_t passes = kTileN / pass_cols;
  uint32_t* q = w.q.data_as<uint32_t>();
  const int64_t tile_words = w.steps * kTileN;
#pragma omp parallel if (!omp_in_parallel())
  {
    std::vector<uint32_t> staged(static_cast<std::size_t>(tile_words));
#pragma omp for schedule(static)
    for (int64_t tile = 0; tile < w.tiles; ++tile) {
      uint32_t* words = q + tile * tile_words;
      std::copy(words, words + tile_words, staged.begin());
      for (int64_t p = 0; p < passes; ++p) {
        for (int64_t d = 0; d < w.steps; ++d) {
          const uint32_t* src = staged.data() + d * kTileN + p * pass_cols;
          std::copy(src, src + pass_cols, words + (p * w.steps + d) * pass_cols);
        }
      }
    }
  }
  w.pass_cols = pass_cols;
}

void permute_columns(const float* x, int64_t M, int64_t k_in, const std::vector<int32_t>& perm,
                     float* out) {
  const auto K = static_cast<int64_t>(perm.size());
  for (int64_t m = 0; m < M; ++m) {
    const float* src = x + m * k_in;
    float* dst = out + m * K;
    for (int64_t k = 0; k < K; ++k) dst[k] = perm[k] < 0 ? 0.0f : src[perm[k]];
  }
}

Result<TiledWeights> tile_int_weights(const IntWeights& w, float zero_offset,
                                      std::string_view kernel, const Canonical& weights) {
  TiledWeights t;
  const int rows_per_word = 32 / w.bits;
  t.bits = w.bits;
  t.k_in = w.K;
  t.N = w.N;
  t.tiles = (w.N + kTileN - 1) / kTileN;
  t.group_steps = w.group_size / rows_per_word;
  t.bias = w.bias;
  std::vector<int32_t> groups;
  if (!w.g_idx.empty()) {
    QL_ASSIGN_OR_RETURN(t.perm, grouped_rows(w, groups, kernel, weights));
    // A sorted g_idx that keeps every row in place is no act-order at all.
    bool identity = static_cast<int64_t>(t.perm.size()) == w.K;
    for (int64_t k = 0; k < static_cast<int64_t>(t.perm.size()) && identity; ++k) {
      identity = t.perm[k] == k;
    }
    if (identity) t.perm.clear();
  } else {
    for (int64_t b = 0; b < w.K / w.group_size; ++b) groups.push_back(static_cast<int32_t>(b));
  }
  t.K = t.perm.empty() ? w.K : static_cast<int64_t>(t.perm.size());
  t.steps = t.K / rows_per_word;
  t.groups = t.K / w.group_size;

  QL_ASSIGN_OR_RETURN(t.q, Tensor::allocate(DType::kI32, {t.tiles, t.steps, kTileN}));
  QL_ASSIGN_OR_RETURN(
      t.scales, Tensor::allocate(narrowest_scale_dtype(w.scales), {t.tiles, t.groups, kTileN}));
  const DType scale_dtype = t.scales.dtype();
  if (!w.zeros.empty()) {
    QL_ASSIGN_OR_RETURN(t.zeros, Tensor::allocate(DType::kU8, {t.tiles, t.groups, kTileN}));
  }
  t.zero_offset = zero_offset;
  const int64_t N = w.N;
  const int bits = w.bits;
  const uint32_t mask = (1u << bits) - 1;
  uint32_t* q = t.q.data_as<uint32_t>();
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
  for (int64_t tile = 0; tile < t.tiles; ++tile) {
    const int64_t width = std::min(kTileN, N - tile * kTileN);
    for (int64_t d = 0; d < t.steps; ++d) {
      uint32_t* dst = q + (tile * t.steps + d) * kTileN;
      for (int64_t c = 0; c < width; ++c) {
        const int64_t n = tile * kTileN + c;
        if (t.perm.empty()) {
          dst[c] = w.qweight[d * N + n];
          continue;
        }
        uint32_t word = 0;
        for (int i = 0; i < rows_per_word; ++i) {
          const int64_t k = t.perm[d * rows_per_word + i];
          if (k < 0) continue;  // padding: its activation is 0, any code works
          const uint32_t code =
              (w.qweight[(k / rows_per_word) * N + n] >> (bits * (k % rows_per_word))) & mask;
          word |= code << (bits * i);
        }
        dst[c] = word;
      }
    }
    for (int64_t b = 0; b < t.groups; ++b) {
      const int64_t at0 = static_cast<int64_t>(groups[b]) * N + tile * kTileN;
      const int64_t out0 = (tile * t.groups + b) * kTileN;
      for (int64_t c = 0; c < width; ++c) {
        const float s = w.scales[at0 + c];
        if (scale_dtype == DType::kF32) {
          t.scales.data_as<float>()[out0 + c] = s;
        } else {
          t.scales.data_as<uint16_t>()[out0 + c] =
              scale_dtype == DType::kF16 ? f32_to_f16(s) : f32_to_bf16(s);
        }
        if (!w.zeros.empty()) t.zeros.data_as<uint8_t>()[out0 + c] = w.zeros[at0 + c];
      }
    }
  }
  return t;
}

void TiledWeights::group_params(int64_t tile, int64_t g, int64_t c0, int64_t count, float* s,
                                float* sz) const {
  const int64_t at = g * kTileN + c0;
  const void* stored = tile_scales(tile);
  const uint8_t* z = tile_zeros(tile);
  for (int64_t c = 0; c < count; ++c) {
    s[c] = load_as_f32(stored, scales.dtype(), static_cast<std::size_t>(at + c));
    sz[c] = s[c] * (z == nullptr ? symmetric_term() : static_cast<float>(z[at + c]) + zero_offset);
  }
}

Result<std::unique_ptr<PreparedLinear>> IntTileKernel::prepare(const Canonical& weights,
                                                               const LinearProblem& problem,
                                                               DeviceContext& /*device*/) const {
  QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, name_));
  const int rows_per_word = 32 / std::max(w->bits, 1);
  if ((bits_ != 0 && w->bits != bits_) || (w->bits != 4 && w->bits != 8) ||
      w->group_size % rows_per_word != 0 ||
      (w->g_idx.empty() ? w->K % w->group_size != 0 : w->K % rows_per_word != 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: layer \"{}\": bits={} group_size={} K={} were not accepted by check() "
                      "({})",
                      name_, weights.name, w->bits, w->group_size, w->K, problem.to_string());
  }
  QL_ASSIGN_OR_RETURN(TiledWeights t,
                      tile_int_weights(*w, zero_offset(isa_, w->bits), name_, weights));
  return std::unique_ptr<PreparedLinear>(
      std::make_unique<TiledLinear>(problem, name_, isa_, std::move(t)));
}

namespace {

// Portable: one output row at a time, 64 columns vectorised by the compiler (sharing decoded
// codes across rows measured slower: GCC stops vectorising over the columns).
template <int kBits>
void generic_rows(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0, int64_t r1,
                  float* ytile) {
  constexpr int kFields = 32 / kBits;
  constexpr uint32_t kMask = (1u << kBits) - 1;
  const uint32_t* q = w.tile_q(tile);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = rows.values + r * w.steps * 8;
    const float* sums = rows.sums + r * w.groups;
    float* yrow = ytile + (r - r0) * kTileN;
    for (int64_t g = 0; g < w.groups; ++g) {
      float acc[kTileN] = {};
      for (int64_t d = g * w.group_steps; d < (g + 1) * w.group_steps; ++d) {
        const uint32_t* words = q + d * kTileN;
        const float* xs = x + d * 8;
        for (int64_t c = 0; c < kTileN; ++c) {
          float sum = acc[c];
          for (int i = 0; i < kFields; ++i) {
            // Through int32: SSE2 converts signed ints to float, not unsigned ones.
            const auto code = static_cast<int32_t>((words[c] >> (kBits * i)) & kMask);
            sum += static_cast<float>(code) * xs[i];
          }
          acc[c] = sum;
        }
      }
      float s[kTileN];
      float sz[kTileN];
      w.group_params(tile, g, 0, kTileN, s, sz);
      for (int64_t c = 0; c < kTileN; ++c) yrow[c] += s[c] * acc[c] - sz[c] * sums[g];
    }
  }
}

}  // namespace

void tile_job_generic(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0, int64_t r1,
                      float* ytile) {
  if (w.bits == 4) {
    generic_rows<4>(w, rows, tile, r0, r1, ytile);
  } else {
    generic_rows<8>(w, rows, tile, r0, r1, ytile);
  }
}

}  // namespace qlinear::int_tiles
