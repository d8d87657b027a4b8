// cpu.dense.avx2 | scheme: unquantized bf16 or f16 weights (the lm_head of AWQ/GPTQ checkpoints,
//   unquantized models), activations f32/bf16/f16, outputs f32/bf16/f16, bias
// after prepare: 16-column panels of k pairs, still 16-bit (dense_panels.h) | limits: any K, N;
//   f32 weights are left to cpu.dense.blas.sgemm
// numerics: weights and activations widen exactly to f32 (a shift or an and-mask for bf16,
//   vcvtph2ps for f16); f32 FMA accumulation, no other rounding
// engines: "gemv" below kGemmMinRows rows: each panel streams once per block of up to 4 rows and
//   its weights widen in registers; "gemm" from it: per 256-k chunk a panel is widened once into
//   an L1 f32 panel that a 6 x 16 FMA kernel reuses for every row of the job
// tested on: AMD EPYC Zen 3 (2 cores, AVX2, no AVX-512)
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <fmt/format.h>
#include <omp.h>

#include "kernels/common/engines.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/dense_panels.h"
#include "kernels/cpu/thread_budget.h"
#include "kernels/kernel.h"

namespace qlinear {
namespace {

using dense_cpu::DensePanels;
using dense_cpu::kPairHalves;
using dense_cpu::kPanelN;

constexpr std::string_view kName = "cpu.dense.avx2";

// The gemm engine runs from this many rows on. Measured (1 thread, thread CPU time, best of 15,
// K = 4096, N = 2048, bf16 weights, Zen 3): gemv / gemm 59 / 51 GFLOP/s at M = 6, 56 / 54 at 8,
// 51 / 54 at 9, 60 / 64 at 11, 59 / 68 at 16, 60 / 76 at 24; sgemm 17-42 over that range.
constexpr int64_t kGemmMinRows = 9;
constexpr int kGemvMaxRows = 4;   // rows per gemv block: 8 accumulators + 4 widened weights
constexpr int kGemmRows = 6;      // rows of the FMA kernel: 12 accumulators
constexpr int64_t kChunkK = 256;  // k per L1 panel: 256 x 16 floats = 16 KiB
// Panels per gemm job: the job's x chunk (rows x 256 floats, in L2) serves 4 panels.
constexpr int64_t kGroupPanels = 4;
constexpr int64_t kGroupN = kGroupPanels * kPanelN;
constexpr int64_t kJobRowsMax = 192;  // a multiple of kGemmRows; its f32 tile is 48 KiB

std::string_view engine_at(int64_t M) { return M >= kGemmMinRows ? "gemm" : "gemv"; }

// Floats between the f32 rows of x: 64 bytes past a multiple of 64, so that rows a multiple of
// 4 KiB apart (K = 1024, 4096, ...) do not all fall into the same L1 sets in the 6-row kernel.
int64_t x_stride(int64_t Kp) { return (Kp + 15) / 16 * 16 + 16; }

#if defined(__x86_64__)

// Rows per gemm job: all of M up to kJobRowsMax (each job reads its weights once), cut further
// while there are fewer than 4 jobs per thread; a multiple of kGemmRows.
int64_t gemm_job_rows(int64_t M, int64_t groups, int threads) {
  int64_t chunks = (M + kJobRowsMax - 1) / kJobRowsMax;
  const int64_t blocks = (M + kGemmRows - 1) / kGemmRows;
  while (chunks < blocks && groups * chunks < 4 * int64_t{threads}) ++chunks;
  const int64_t per = (M + chunks - 1) / chunks;
  return (per + kGemmRows - 1) / kGemmRows * kGemmRows;
}

#define QL_AVX2 __attribute__((target("avx2,fma,f16c")))

// x row as f32 into dst [Kp] (zero past K): bf16 by a shift, f16 by vcvtph2ps.
QL_AVX2 void widen_row(const void* src, DType dtype, int64_t K, int64_t Kp, float* dst) {
  int64_t k = 0;
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<std::size_t>(K) * sizeof(float));
    k = K;
  } else {
    const auto* h = static_cast<const uint16_t*>(src);
    for (; k + 8 <= K; k += 8) {
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + k));
      const __m256 v = dtype == DType::kBF16
                           ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16))
                           : _mm256_cvtph_ps(raw);
      _mm256_storeu_ps(dst + k, v);
    }
    for (; k < K; ++k) dst[k] = dtype == DType::kBF16 ? bf16_to_f32(h[k]) : f16_to_f32(h[k]);
  }
  for (; k < Kp; ++k) dst[k] = 0.0f;
}

// The f32 weights of k = 2j (even) and 2j + 1 (odd) for columns 8h .. 8h + 7 of pair block b.
template <DType kW>
QL_AVX2 inline void widen_pair(const uint16_t* b, int h, __m256* even, __m256* odd) {
  if constexpr (kW == DType::kBF16) {
    const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 16 * h));
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(-65536)));
  } else {
    *even = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(b + 8 * h)));
    *odd = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(b + kPanelN + 8 * h)));
  }
}

// One pair block into kRows rows' accumulators; chain (2u + parity) % kChains takes each k.
// Both halves are widened first so each row's two broadcasts feed 4 FMAs.
template <DType kW, int kRows, int kChains, int kU>
QL_AVX2 inline void gemv_step(const uint16_t* block, const float* x, int64_t ldx, int64_t k,
                              __m256 (&acc)[kRows][kChains][2]) {
  constexpr int kEven = (2 * kU) % kChains;
  constexpr int kOdd = (2 * kU + 1) % kChains;
  __m256 even[2];
  __m256 odd[2];
  widen_pair<kW>(block, 0, &even[0], &odd[0]);
  widen_pair<kW>(block, 1, &even[1], &odd[1]);
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    const __m256 xe = _mm256_broadcast_ss(x + r * ldx + k);
    const __m256 xo = _mm256_broadcast_ss(x + r * ldx + k + 1);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      acc[r][kEven][h] = _mm256_fmadd_ps(even[h], xe, acc[r][kEven][h]);
      acc[r][kOdd][h] = _mm256_fmadd_ps(odd[h], xo, acc[r][kOdd][h]);
    }
  }
}

// out [kRows][16] = x [kRows][Kp] . panel^T over every pair. One or two rows would wait on the
// FMA latency with 2 accumulators each, so they spread k over 4 (1 row) or 2 (2 rows) chains.
template <DType kW, int kRows>
QL_AVX2 void gemv_block(const uint16_t* panel, int64_t pairs, const float* x, int64_t ldx,
                        float* out) {
  constexpr int kChains = kRows == 1 ? 4 : (kRows == 2 ? 2 : 1);
  __m256 acc[kRows][kChains][2];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < kChains; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 2 <= pairs; j += 2) {
    gemv_step<kW, kRows, kChains, 0>(panel + j * kPairHalves, x, ldx, 2 * j, acc);
    gemv_step<kW, kRows, kChains, 1>(panel + (j + 1) * kPairHalves, x, ldx, 2 * j + 2, acc);
  }
  if (j < pairs) gemv_step<kW, kRows, kChains, 0>(panel + j * kPairHalves, x, ldx, 2 * j, acc);
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m256 sum = acc[r][0][h];
#pragma GCC unroll 4
      for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[r][c][h]);
      _mm256_storeu_ps(out + r * kPanelN + 8 * h, sum);
    }
  }
}

// out [kc][16] = the f32 weights of k0 .. k0 + kc of a panel (k0, kc even).
template <DType kW>
QL_AVX2 void widen_chunk(const uint16_t* panel, int64_t k0, int64_t kc, float* out) {
  for (int64_t j = 0; j < kc / 2; ++j) {
    const uint16_t* block = panel + (k0 / 2 + j) * kPairHalves;
    float* even = out + 2 * j * kPanelN;
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m256 e;
      __m256 o;
      widen_pair<kW>(block, h, &e, &o);
      _mm256_store_ps(even + 8 * h, e);
      _mm256_store_ps(even + kPanelN + 8 * h, o);
    }
  }
}

// y [kRows][16] (row stride ldy) += x [kRows][kc] (row stride ldx) . panel [kc][16]: one load
// per 8 weights and one broadcast per row and k feed 2 * kRows FMAs.
template <int kRows>
QL_AVX2 void gemm_block(const float* panel, int64_t kc, const float* x, int64_t ldx, float* y,
                        int64_t ldy) {
  __m256 acc[kRows][2];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_load_ps(panel + k * kPanelN);
    const __m256 w1 = _mm256_load_ps(panel + k * kPanelN + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 xb = _mm256_broadcast_ss(x + r * ldx + k);
      acc[r][0] = _mm256_fmadd_ps(w0, xb, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(w1, xb, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    float* out = y + r * ldy;
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), acc[r][0]));
    _mm256_storeu_ps(out + 8, _mm256_add_ps(_mm256_loadu_ps(out + 8), acc[r][1]));
  }
}

using GemvFn = void (*)(const uint16_t*, int64_t, const float*, int64_t, float*);
using GemmFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t);
using ChunkFn = void (*)(const uint16_t*, int64_t, int64_t, float*);

template <DType kW, int... kIs>
constexpr std::array<GemvFn, sizeof...(kIs)> gemv_table(std::integer_sequence<int, kIs...>) {
  return {&gemv_block<kW, kIs + 1>...};
}
template <int... kIs>
constexpr std::array<GemmFn, sizeof...(kIs)> gemm_table(std::integer_sequence<int, kIs...>) {
  return {&gemm_block<kIs + 1>...};
}

// [0]: bf16 weights, [1]: f16 weights.
const std::array<std::array<GemvFn, kGemvMaxRows>, 2> kGemvFns = {
    gemv_table<DType::kBF16>(std::make_integer_sequence<int, kGemvMaxRows>()),
    gemv_table<DType::kF16>(std::make_integer_sequence<int, kGemvMaxRows>())};
const std::array<GemmFn, kGemmRows> kGemmFns =
    gemm_table(std::make_integer_sequence<int, kGemmRows>());
const std::array<ChunkFn, 2> kChunkFns = {&widen_chunk<DType::kBF16>, &widen_chunk<DType::kF16>};

void widen_rows(ConstMatrixView x, int64_t Kp, int64_t ldx, float* out, int threads) {
  const int64_t M = x.rows();
  threads = static_cast<int>(std::clamp<int64_t>(M / 4, 1, threads));  // a few rows: no team
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t m = 0; m < M; ++m) widen_row(x.row(m), x.dtype(), x.cols(), Kp, out + m * ldx);
}

void run_gemv(const DensePanels& w, const float* x, int64_t M, MatrixView y, int threads) {
  const int64_t ldx = x_stride(w.Kp);
  const GemvFn* fns = kGemvFns[w.dtype == DType::kBF16 ? 0 : 1].data();
  threads = static_cast<int>(std::min<int64_t>(threads, w.panels));
  // Static: each thread streams one contiguous run of panels.
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t p = 0; p < w.panels; ++p) {
    alignas(32) float yt[kGemvMaxRows * kPanelN];
    for (int64_t r0 = 0; r0 < M; r0 += kGemvMaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kGemvMaxRows, M - r0));
      fns[rows - 1](w.panel(p), w.pairs(), x + r0 * ldx, ldx, yt);
      dense_cpu::store_tile(yt, kPanelN, rows, r0, p * kPanelN, w.width(p), w.bias, y);
    }
  }
}

// Rows [r0, r1) of panel group `group` into y, through yt [r1 - r0][kGroupN].
void gemm_job(const DensePanels& w, const float* x, int64_t group, int64_t r0, int64_t r1,
              float* panel, float* yt, MatrixView y) {
  const int64_t ldx = x_stride(w.Kp);
  const ChunkFn widen = kChunkFns[w.dtype == DType::kBF16 ? 0 : 1];
  const int64_t p0 = group * kGroupPanels;
  const int64_t p1 = std::min(w.panels, p0 + kGroupPanels);
  std::fill(yt, yt + (r1 - r0) * kGroupN, 0.0f);
  for (int64_t k0 = 0; k0 < w.Kp; k0 += kChunkK) {
    const int64_t kc = std::min(kChunkK, w.Kp - k0);
    for (int64_t p = p0; p < p1; ++p) {
      widen(w.panel(p), k0, kc, panel);
      // Blocks of balanced size (8 rows: 4 + 4, not 6 + 2): a block of 1 or 2 rows has too few
      // accumulators to hide the FMA latency.
      const int64_t blocks = (r1 - r0 + kGemmRows - 1) / kGemmRows;
      for (int64_t i = 0, r = r0; i < blocks; ++i) {
        const int rows = static_cast<int>((r1 - r + (blocks - i) - 1) / (blocks - i));
        kGemmFns[rows - 1](panel, kc, x + r * ldx + k0, ldx,
                           yt + (r - r0) * kGroupN + (p - p0) * kPanelN, kGroupN);
        r += rows;
      }
    }
  }
  const int64_t n0 = p0 * kPanelN;
  dense_cpu::store_tile(yt, kGroupN, r1 - r0, r0, n0, std::min(kGroupN, w.N - n0), w.bias, y);
}

void run_gemm(const DensePanels& w, const float* x, int64_t M, MatrixView y, int threads,
              float* ytiles) {
  const int64_t groups = (w.panels + kGroupPanels - 1) / kGroupPanels;
  const int64_t rows = gemm_job_rows(M, groups, threads);
  const int64_t chunks = (M + rows - 1) / rows;
  const int64_t jobs = groups * chunks;
  threads = static_cast<int>(std::min<int64_t>(threads, jobs));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    alignas(32) float panel[kChunkK * kPanelN];
    float* yt = ytiles + static_cast<int64_t>(omp_get_thread_num()) * kJobRowsMax * kGroupN;
    // Dynamic: jobs are long and a shared machine's cores do not run at one speed.
#pragma omp for schedule(dynamic, 1)
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t r0 = (job % chunks) * rows;
      gemm_job(w, x, job / chunks, r0, std::min(M, r0 + rows), panel, yt, y);
    }
  }
}

#endif  // __x86_64__

class PreparedDenseAvx2 final : public PreparedLinear {
 public:
  PreparedDenseAvx2(const LinearProblem& problem, DensePanels panels)
      : PreparedLinear(problem, Location::host()), w_(std::move(panels)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
#if defined(__x86_64__)
    const int64_t M = x.rows();
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    // Shared fairly with concurrent calls; at most one thread per panel and block of rows.
    const ThreadBudget budget(ctx.threads, w_.panels * ((M + kGemmRows - 1) / kGemmRows));
    const int threads = budget.threads();
    widen_rows(x, w_.Kp, x_stride(w_.Kp), b.xf, threads);
    if (engine_at(M) == "gemm") {
      run_gemm(w_, b.xf, M, y, threads, b.ytiles);
    } else {
      run_gemv(w_, b.xf, M, y, threads);
    }
    return Status::ok_status();
#else
    (void)x;
    (void)y;
    (void)ctx;
    return make_error(ErrorCode::kInternal, "{}: not compiled for this architecture", kName);
#endif
  }

 private:
  struct Buffers {
    float* xf = nullptr;      // x as f32 [M, Kp], rows x_stride(Kp) apart
    float* ytiles = nullptr;  // gemm: a job's f32 tile per thread
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * x_stride(w_.Kp));
    if (engine_at(M) == "gemm") b.ytiles = c.take<float>(max_threads() * kJobRowsMax * kGroupN);
    return b;
  }

  DensePanels w_;
};

class DenseAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    QL_REQUIRE(dense_cpu::check_dense_native(problem, device));
    const CpuFeatures& cpu = device.cpu;
    if (!cpu.avx2 || !cpu.fma || !cpu.f16c) {
      return Verdict::reject(Reason::kMissingIsa,
                             fmt::format("needs avx2, fma and f16c; the CPU lacks {}",
                                         !cpu.avx2 ? "avx2" : (!cpu.fma ? "fma" : "f16c")));
    }
    return Verdict::accept();
  }

  std::vector<Engine> engines(const LinearProblem& problem) const override {
    return engines_over(problem, {kGemmMinRows},
                        [](int64_t m) { return std::string(engine_at(m)); });
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(DensePanels panels, dense_cpu::make_dense_panels(*w, 1, kName, weights));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedDenseAvx2>(problem, std::move(panels)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_dense_avx2() {
  static const DenseAvx2 kernel;
  return kernel;
}

}  // namespace qlinear
