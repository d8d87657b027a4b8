// cpu.dense.avx512 | scheme: unquantized bf16 or f16 weights (the lm_head of AWQ/GPTQ
//   checkpoints, unquantized models), activations f32/bf16/f16, outputs f32/bf16/f16, bias
// after prepare: 16-column panels of k pairs, still 16-bit (dense_panels.h), N padded to 64
// limits: any K, N; bf16 weights need avx512_bf16 (on AVX-512 CPUs without it cpu.dense.avx2
//   runs them: decode streams the same bytes); f32 weights are left to cpu.dense.blas.sgemm
// engines and numerics:
//   bf16 weights, "dpbf16" at every M: vdpbf16ps on the panels as stored (a pair block is its
//     operand). bf16 activations as they are; f32 and f16 ones split into bf16 hi + lo (f16
//     exactly, f32 to 2^-16 relative), each product exact, f32 accumulation. 6 rows x 64
//     columns per block; jobs of 4 panels x up to 192 rows, 128-k chunks stay in L1.
//   f16 weights, vcvtph2ps to exact f32 and f32 FMA: "gemv" below kGemmMinRows rows widens in
//     registers; "gemm" widens each 128-k chunk of 4 panels once into an L1 f32 panel for a
//     6 x 64 FMA kernel.
// tested on: compiled and its check() tested on AMD EPYC Zen 3 (AVX2 only); its run tests skip
//   there (missing-isa) and need an AVX-512 host
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

constexpr std::string_view kName = "cpu.dense.avx512";

constexpr int64_t kGroupPanels = 4;  // 64 columns per block: 4 zmm per activation broadcast
constexpr int64_t kGroupN = kGroupPanels * kPanelN;
constexpr int kBlockRows = 6;         // 6 x 4 = 24 accumulators of 32 zmm
constexpr int64_t kChunkPairs = 64;   // dpbf16: 4 panels x 64 pairs x 64 bytes = 16 KiB of L1
constexpr int64_t kChunkK = 128;      // f16 gemm: a 128 x 64 f32 panel, 32 KiB
constexpr int64_t kJobRowsMax = 192;  // a multiple of kBlockRows
// f16 weights: the gemm engine from this many rows on. Not measured on AVX-512 yet: the switch
// measured for cpu.dense.avx2 (same two structures), to be tuned on an AVX-512 host.
constexpr int64_t kGemmMinRows = 9;

std::string_view engine_at(DType weights, int64_t M) {
  if (weights == DType::kBF16) return "dpbf16";
  return M >= kGemmMinRows ? "gemm" : "gemv";
}

// bf16 weights with f32 or f16 activations run hi + lo rows.
bool split_rows(DType act) { return act != DType::kBF16; }

// Elements of `bytes` each between activation rows: 64 bytes past a multiple of 64, so that rows
// a multiple of 4 KiB apart (K = 2048, 4096, ...) do not all fall into the same L1 sets.
int64_t x_stride(int64_t Kp, int64_t bytes) {
  const int64_t line = 64 / bytes;
  return (Kp + line - 1) / line * line + line;
}

#if defined(__x86_64__)

#define QL_AVX512 __attribute__((target("avx512f")))
#define QL_AVX512BF16 __attribute__((target("avx512f,avx512bf16")))

// Rows per job: all of M up to kJobRowsMax (each job reads its weights once), cut further while
// there are fewer than 4 jobs per thread; a multiple of kBlockRows.
int64_t job_rows(int64_t M, int64_t groups, int threads) {
  int64_t chunks = (M + kJobRowsMax - 1) / kJobRowsMax;
  const int64_t blocks = (M + kBlockRows - 1) / kBlockRows;
  while (chunks < blocks && groups * chunks < 4 * int64_t{threads}) ++chunks;
  const int64_t per = (M + chunks - 1) / chunks;
  return (per + kBlockRows - 1) / kBlockRows * kBlockRows;
}

// --- activations -------------------------------------------------------------------------

// One x row as f32 into dst [Kp] (zero past K).
QL_AVX512 void widen_row(const void* src, DType dtype, int64_t K, int64_t Kp, float* dst) {
  int64_t k = 0;
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<std::size_t>(K) * sizeof(float));
    k = K;
  } else {
    const auto* h = static_cast<const uint16_t*>(src);
    for (; k + 16 <= K; k += 16) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + k));
      const __m512 v = dtype == DType::kBF16
                           ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16))
                           : _mm512_cvtph_ps(raw);
      _mm512_storeu_ps(dst + k, v);
    }
    for (; k < K; ++k) dst[k] = dtype == DType::kBF16 ? bf16_to_f32(h[k]) : f16_to_f32(h[k]);
  }
  for (; k < Kp; ++k) dst[k] = 0.0f;
}

// One x row as bf16 hi (+ lo = bf16(x - hi) when lo is not null) into [Kp] (zero past K).
// vcvtneps2bf16 rounds to nearest even like f32_to_bf16 (the scalar tail).
QL_AVX512BF16 void split_row(const void* src, DType dtype, int64_t K, int64_t Kp, uint16_t* hi,
                             uint16_t* lo) {
  int64_t k = 0;
  if (dtype == DType::kBF16) {
    std::memcpy(hi, src, static_cast<std::size_t>(K) * sizeof(uint16_t));
    k = K;
  } else {
    for (; k + 16 <= K; k += 16) {
      const __m512 v = dtype == DType::kF32
                           ? _mm512_loadu_ps(static_cast<const float*>(src) + k)
                           : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                 static_cast<const uint16_t*>(src) + k)));
      const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + k), h);
      if (lo != nullptr) {
        const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + k),
                            (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hf)));
      }
    }
    for (; k < K; ++k) {
      const float v = load_as_f32(src, dtype, static_cast<std::size_t>(k));
      hi[k] = f32_to_bf16(v);
      if (lo != nullptr) lo[k] = f32_to_bf16(v - bf16_to_f32(hi[k]));
    }
  }
  for (; k < Kp; ++k) {
    hi[k] = 0;
    if (lo != nullptr) lo[k] = 0;
  }
}

// --- bf16 weights: vdpbf16ps -----------------------------------------------------------------

QL_AVX512BF16 inline __m512bh pair_of(const uint16_t* x) {
  int32_t bits;
  std::memcpy(&bits, x, sizeof(bits));
  return (__m512bh)_mm512_set1_epi32(bits);
}

// yt [kRows][64] (ld 64) += x . w over `pairs` k pairs of 4 panels for kRows rows of hi (+ lo)
// bf16 activations (row stride ldx, at the chunk's first k). One row with lo sends lo to a
// second chain so the two products of a pair do not wait on each other.
template <int kRows, bool kLo>
QL_AVX512BF16 void dp_block(const uint16_t* const* w, int64_t pairs, const uint16_t* hi,
                            const uint16_t* lo, int64_t ldx, float* yt) {
  constexpr int kChains = kRows == 1 && kLo ? 2 : 1;
  __m512 acc[kRows][kGroupPanels][kChains];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) acc[r][g][c] = _mm512_setzero_ps();
    }
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh wv[kGroupPanels];
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      wv[g] = (__m512bh)_mm512_load_si512(w[g] + p * kPairHalves);
    }
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m512bh xh = pair_of(hi + r * ldx + 2 * p);
#pragma GCC unroll 4
      for (int g = 0; g < kGroupPanels; ++g)
        acc[r][g][0] = _mm512_dpbf16_ps(acc[r][g][0], wv[g], xh);
      if constexpr (kLo) {
        const __m512bh xl = pair_of(lo + r * ldx + 2 * p);
#pragma GCC unroll 4
        for (int g = 0; g < kGroupPanels; ++g) {
          acc[r][g][kChains - 1] = _mm512_dpbf16_ps(acc[r][g][kChains - 1], wv[g], xl);
        }
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      __m512 sum = acc[r][g][0];
      if constexpr (kChains == 2) sum = _mm512_add_ps(sum, acc[r][g][1]);
      float* out = yt + r * kGroupN + g * kPanelN;
      _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), sum));
    }
  }
}

// --- f16 weights: vcvtph2ps + FMA ------------------------------------------------------------

// gemv: yt [kRows][64] += x . w over `pairs` pairs of 4 panels, widened in registers (x f32,
// row stride ldx, at the chunk's first k). One row keeps even and odd k on separate chains.
template <int kRows>
QL_AVX512 void fma_fused_block(const uint16_t* const* w, int64_t pairs, const float* x, int64_t ldx,
                               float* yt) {
  constexpr int kChains = kRows == 1 ? 2 : 1;
  __m512 acc[kRows][kGroupPanels][kChains];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) acc[r][g][c] = _mm512_setzero_ps();
    }
  }
  for (int64_t p = 0; p < pairs; ++p) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      const uint16_t* block = w[g] + p * kPairHalves;
      const __m512 even =
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block)));
      const __m512 odd =
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPanelN)));
#pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) {
        acc[r][g][0] = _mm512_fmadd_ps(even, _mm512_set1_ps(x[r * ldx + 2 * p]), acc[r][g][0]);
        acc[r][g][kChains - 1] =
            _mm512_fmadd_ps(odd, _mm512_set1_ps(x[r * ldx + 2 * p + 1]), acc[r][g][kChains - 1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      __m512 sum = acc[r][g][0];
      if constexpr (kChains == 2) sum = _mm512_add_ps(sum, acc[r][g][1]);
      float* out = yt + r * kGroupN + g * kPanelN;
      _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), sum));
    }
  }
}

// gemm: panel [kc][64] = the f32 weights of k0 .. k0 + kc of 4 panels (k0, kc even).
QL_AVX512 void widen_chunk(const uint16_t* const* w, int64_t k0, int64_t kc, float* panel) {
  for (int64_t j = 0; j < kc / 2; ++j) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      const uint16_t* block = w[g] + (k0 / 2 + j) * kPairHalves;
      float* even = panel + 2 * j * kGroupN + g * kPanelN;
      _mm512_store_ps(even,
                      _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block))));
      _mm512_store_ps(
          even + kGroupN,
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(block + kPanelN))));
    }
  }
}

// gemm: yt [kRows][64] += x [kRows][kc] . panel [kc][64]: 4 loads and kRows broadcasts feed
// 4 * kRows FMAs.
template <int kRows>
QL_AVX512 void fma_panel_block(const float* panel, int64_t kc, const float* x, int64_t ldx,
                               float* yt) {
  __m512 acc[kRows][kGroupPanels];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) acc[r][g] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m512 wv[kGroupPanels];
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g)
      wv[g] = _mm512_load_ps(panel + k * kGroupN + g * kPanelN);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m512 xb = _mm512_set1_ps(x[r * ldx + k]);
#pragma GCC unroll 4
      for (int g = 0; g < kGroupPanels; ++g) acc[r][g] = _mm512_fmadd_ps(wv[g], xb, acc[r][g]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroupPanels; ++g) {
      float* out = yt + r * kGroupN + g * kPanelN;
      _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), acc[r][g]));
    }
  }
}

using DpFn = void (*)(const uint16_t* const*, int64_t, const uint16_t*, const uint16_t*, int64_t,
                      float*);
using FusedFn = void (*)(const uint16_t* const*, int64_t, const float*, int64_t, float*);
using PanelFn = void (*)(const float*, int64_t, const float*, int64_t, float*);

template <bool kLo, int... kIs>
constexpr std::array<DpFn, sizeof...(kIs)> dp_table(std::integer_sequence<int, kIs...>) {
  return {&dp_block<kIs + 1, kLo>...};
}
template <int... kIs>
constexpr std::array<FusedFn, sizeof...(kIs)> fused_table(std::integer_sequence<int, kIs...>) {
  return {&fma_fused_block<kIs + 1>...};
}
template <int... kIs>
constexpr std::array<PanelFn, sizeof...(kIs)> panel_table(std::integer_sequence<int, kIs...>) {
  return {&fma_panel_block<kIs + 1>...};
}

const std::array<std::array<DpFn, kBlockRows>, 2> kDpFns = {
    dp_table<false>(std::make_integer_sequence<int, kBlockRows>()),
    dp_table<true>(std::make_integer_sequence<int, kBlockRows>())};
const std::array<FusedFn, kBlockRows> kFusedFns =
    fused_table(std::make_integer_sequence<int, kBlockRows>());
const std::array<PanelFn, kBlockRows> kPanelFns =
    panel_table(std::make_integer_sequence<int, kBlockRows>());

// The activations of one call, in the form its engine reads.
struct Rows {
  const uint16_t* hi = nullptr;  // dpbf16: bf16 [M, Kp]
  const uint16_t* lo = nullptr;  // dpbf16 with f32/f16 x: bf16 [M, Kp], else null
  const float* xf = nullptr;     // f16 weights: f32 [M, Kp]
  int64_t ld = 0;                // elements between rows (x_stride)
};

// Calls fn(r, rows) over [r0, r1) in blocks of at most kBlockRows rows, balanced (8 rows: 4 + 4,
// not 6 + 2: a block of 1 or 2 rows has too few accumulators to hide the latency).
template <class Fn>
void for_blocks(int64_t r0, int64_t r1, Fn&& fn) {
  const int64_t blocks = (r1 - r0 + kBlockRows - 1) / kBlockRows;
  for (int64_t i = 0, r = r0; i < blocks; ++i) {
    const int64_t rows = (r1 - r + (blocks - i) - 1) / (blocks - i);
    fn(r, static_cast<int>(rows));
    r += rows;
  }
}

// Rows [r0, r1) of panel group `group` into y, through yt [r1 - r0][64] (and `panel`, the gemm
// engine's L1 buffer).
void run_job(const DensePanels& w, const Rows& x, std::string_view engine, int64_t group,
             int64_t r0, int64_t r1, float* panel, float* yt, MatrixView y) {
  const uint16_t* panels[kGroupPanels];
  for (int64_t g = 0; g < kGroupPanels; ++g) panels[g] = w.panel(group * kGroupPanels + g);
  std::fill(yt, yt + (r1 - r0) * kGroupN, 0.0f);
  const int64_t Kp = w.Kp;
  if (engine == "dpbf16" || engine == "gemv") {
    // One block of rows needs no chunks: its weights are read once either way.
    const int64_t chunk = r1 - r0 <= kBlockRows ? w.pairs() : kChunkPairs;
    for (int64_t p0 = 0; p0 < w.pairs(); p0 += chunk) {
      const int64_t pairs = std::min(chunk, w.pairs() - p0);
      const uint16_t* at[kGroupPanels];
      for (int64_t g = 0; g < kGroupPanels; ++g) at[g] = panels[g] + p0 * kPairHalves;
      for_blocks(r0, r1, [&](int64_t r, int rows) {
        float* out = yt + (r - r0) * kGroupN;
        if (engine == "dpbf16") {
          kDpFns[x.lo != nullptr][rows - 1](at, pairs, x.hi + r * x.ld + 2 * p0,
                                            x.lo == nullptr ? nullptr : x.lo + r * x.ld + 2 * p0,
                                            x.ld, out);
        } else {
          kFusedFns[rows - 1](at, pairs, x.xf + r * x.ld + 2 * p0, x.ld, out);
        }
      });
    }
  } else {
    for (int64_t k0 = 0; k0 < Kp; k0 += kChunkK) {
      const int64_t kc = std::min(kChunkK, Kp - k0);
      widen_chunk(panels, k0, kc, panel);
      for_blocks(r0, r1, [&](int64_t r, int rows) {
        kPanelFns[rows - 1](panel, kc, x.xf + r * x.ld + k0, x.ld, yt + (r - r0) * kGroupN);
      });
    }
  }
  const int64_t n0 = group * kGroupN;
  dense_cpu::store_tile(yt, kGroupN, r1 - r0, r0, n0, std::min(kGroupN, w.N - n0), w.bias, y);
}

#endif  // __x86_64__

class PreparedDenseAvx512 final : public PreparedLinear {
 public:
  PreparedDenseAvx512(const LinearProblem& problem, DensePanels panels)
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
    const int64_t groups = w_.panels / kGroupPanels;
    // Shared fairly with concurrent calls; at most one thread per group and block of rows.
    const ThreadBudget budget(ctx.threads, groups * ((M + kBlockRows - 1) / kBlockRows));
    const std::string_view engine = engine_at(w_.dtype, M);
    const int64_t Kp = w_.Kp;
    const int64_t K = x.cols();
    const int64_t ld = x_stride(Kp, engine == "dpbf16" ? 2 : 4);
    int threads = static_cast<int>(std::clamp<int64_t>(M / 4, 1, budget.threads()));
    if (engine == "dpbf16") {
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
      for (int64_t m = 0; m < M; ++m) {
        split_row(x.row(m), x.dtype(), K, Kp, b.hi + m * ld,
                  b.lo == nullptr ? nullptr : b.lo + m * ld);
      }
    } else {
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
      for (int64_t m = 0; m < M; ++m) widen_row(x.row(m), x.dtype(), K, Kp, b.xf + m * ld);
    }
    const Rows rows{b.hi, b.lo, b.xf, ld};
    // The rows of a job decide how its rows are blocked and whether K is chunked, hence each
    // output's summation order: they come from the machine's core count, not from this call's
    // share of it, so concurrent calls and any --threads give the bits of a lone call.
    const int64_t per_job = job_rows(M, groups, max_threads());
    const int64_t chunks = (M + per_job - 1) / per_job;
    const int64_t jobs = groups * chunks;
    threads = static_cast<int>(std::min<int64_t>(budget.threads(), jobs));
    const int64_t slot = std::min(per_job, kJobRowsMax) * kGroupN;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      alignas(64) float panel[kChunkK * kGroupN];
      float* yt = b.ytiles + static_cast<int64_t>(omp_get_thread_num()) * slot;
      // Dynamic for long jobs (a shared machine's cores do not run at one speed), static for
      // decode so each thread streams one contiguous run of panels.
      if (chunks > 1 || M > kBlockRows) {
#pragma omp for schedule(dynamic, 1)
        for (int64_t job = 0; job < jobs; ++job) {
          const int64_t r0 = (job % chunks) * per_job;
          run_job(w_, rows, engine, job / chunks, r0, std::min(M, r0 + per_job), panel, yt, y);
        }
      } else {
#pragma omp for schedule(static)
        for (int64_t job = 0; job < jobs; ++job) {
          run_job(w_, rows, engine, job, 0, M, panel, yt, y);
        }
      }
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
    uint16_t* hi = nullptr;   // dpbf16: x as bf16 [M, Kp], rows x_stride apart (all three)
    uint16_t* lo = nullptr;   // dpbf16 with f32/f16 x: x - hi as bf16 [M, Kp]
    float* xf = nullptr;      // f16 weights: x as f32 [M, Kp]
    float* ytiles = nullptr;  // a job's f32 tile per thread
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    if (w_.dtype == DType::kBF16) {
      b.hi = c.take<uint16_t>(M * x_stride(w_.Kp, 2));
      if (split_rows(problem().act_dtype)) b.lo = c.take<uint16_t>(M * x_stride(w_.Kp, 2));
    } else {
      b.xf = c.take<float>(M * x_stride(w_.Kp, 4));
    }
    // Jobs never get more rows than M rounded up to the block (job_rows).
    const int64_t rows = std::min(kJobRowsMax, (M + kBlockRows - 1) / kBlockRows * kBlockRows);
    b.ytiles = c.take<float>(max_threads() * rows * kGroupN);
    return b;
  }

  DensePanels w_;
};

class DenseAvx512 final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    QL_REQUIRE(dense_cpu::check_dense_native(problem, device));
    if (!device.cpu.avx512f) return Verdict::reject(Reason::kMissingIsa, "needs avx512f");
    if (problem.weight_dtype == DType::kBF16 && !device.cpu.avx512_bf16) {
      return Verdict::reject(Reason::kMissingIsa,
                             "bf16 weights need avx512_bf16 (vdpbf16ps); cpu.dense.avx2 runs "
                             "them on this CPU");
    }
    return Verdict::accept();
  }

  std::vector<Engine> engines(const LinearProblem& problem) const override {
    const DType weights = problem.weight_dtype;
    return engines_over(problem, {kGemmMinRows},
                        [weights](int64_t m) { return std::string(engine_at(weights, m)); });
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(DensePanels panels,
                        dense_cpu::make_dense_panels(*w, kGroupPanels, kName, weights));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedDenseAvx512>(problem, std::move(panels)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_dense_avx512() {
  static const DenseAvx512 kernel;
  return kernel;
}

}  // namespace qlinear
