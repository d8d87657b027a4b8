// cpu.fp8.w8a16.avx2 | scheme: FP8 e4m3fn weights, per-tensor/per-channel or block scales
//   (block_k a multiple of 32, any block_n), weight-only (activations f32/bf16/f16)
// after prepare: 16-row panels, one k per 16 bytes ([N/16][K][16] bytes, K padded to the chunk,
//   N to 64),
//   scales per panel row and K block times 2^8 | limits: none on K, N
// numerics: exact f32 weights (vcvtph2ps of the shifted code), f32 FMA accumulation per K chunk
//   (<= 256), chunk sums scaled and accumulated in f32.
// For M <= 6 the decode feeds the FMAs from registers; larger M decodes each 16 x 256 chunk once
//   into an L1 f32 panel reused by every block of 6 activation rows.
// tested on: AMD EPYC Zen 4 (2 cores), forced onto this path with --kernel
#include <algorithm>
#include <array>
#include <memory>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <omp.h>

#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/fp8_cpu_common.h"
#include "kernels/cpu/thread_budget.h"

namespace qlinear {
namespace {

using fp8_cpu::kPanelN;

constexpr std::string_view kName = "cpu.fp8.w8a16.avx2";

#if defined(__x86_64__)

#define QL_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int kMaxRows = 6;  // 6 rows x 2 ymm = 12 accumulators

// 16 e4m3fn codes (one k, 16 rows) -> 2 x 8 floats, value * 2^-8 (fp8_cpu_common.h).
// The shift maps the NaN codes 0x7F / 0xFF onto the finite f16 +-1.875 (+-480 once scaled), so
// those lanes get the f16 quiet NaN 0x7E00 with their sign: vcvtph2ps turns it into the
// 0x7FC00000 / 0xFFC00000 that core's f8e4m3_to_f32 and the other kernels give.
QL_TARGET_AVX2 inline void decode16(const uint8_t* codes, __m256* a, __m256* b) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  __m256i h = _mm256_cvtepi8_epi16(raw);
  h = _mm256_and_si256(_mm256_slli_epi16(h, 7), _mm256_set1_epi16(static_cast<int16_t>(0xBF80)));
  const __m128i magnitude_7f = _mm_set1_epi8(0x7F);
  const __m256i is_nan =
      _mm256_cvtepi8_epi16(_mm_cmpeq_epi8(_mm_and_si128(raw, magnitude_7f), magnitude_7f));
  const __m256i nan =
      _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                      _mm256_set1_epi16(0x7E00));
  h = _mm256_blendv_epi8(h, nan, is_nan);
  *a = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  *b = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

template <int kRows, bool kFused>
QL_TARGET_AVX2 void block_dot(const void* b, int64_t kc, const float* x, int64_t stride,
                              const float* scales, float* yt) {
  // With 1-2 rows, even and odd k go to separate accumulators so the FMA latency overlaps.
  constexpr int kChains = kRows <= 2 ? 2 : 1;
  __m256 acc[kRows][kChains][2];
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 2
    for (int c = 0; c < kChains; ++c) acc[i][c][0] = acc[i][c][1] = _mm256_setzero_ps();
  }
  for (int64_t k0 = 0; k0 < kc; k0 += kChains) {  // kc is a multiple of 32
#pragma GCC unroll 2
    for (int c = 0; c < kChains; ++c) {
      const int64_t k = k0 + c;
      __m256 w0;
      __m256 w1;
      if constexpr (kFused) {
        decode16(static_cast<const uint8_t*>(b) + k * kPanelN, &w0, &w1);
      } else {
        const float* panel = static_cast<const float*>(b) + k * kPanelN;
        w0 = _mm256_load_ps(panel);
        w1 = _mm256_load_ps(panel + 8);
      }
#pragma GCC unroll 6
      for (int i = 0; i < kRows; ++i) {
        const __m256 xv = _mm256_broadcast_ss(x + i * stride + k);
        acc[i][c][0] = _mm256_fmadd_ps(w0, xv, acc[i][c][0]);
        acc[i][c][1] = _mm256_fmadd_ps(w1, xv, acc[i][c][1]);
      }
    }
  }
  const __m256 s0 = _mm256_loadu_ps(scales);
  const __m256 s1 = _mm256_loadu_ps(scales + 8);
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
    __m256 sum0 = acc[i][0][0];
    __m256 sum1 = acc[i][0][1];
    if constexpr (kChains == 2) {
      sum0 = _mm256_add_ps(sum0, acc[i][1][0]);
      sum1 = _mm256_add_ps(sum1, acc[i][1][1]);
    }
    float* out = yt + i * kPanelN;
    _mm256_storeu_ps(out, _mm256_fmadd_ps(sum0, s0, _mm256_loadu_ps(out)));
    _mm256_storeu_ps(out + 8, _mm256_fmadd_ps(sum1, s1, _mm256_loadu_ps(out + 8)));
  }
}

using BlockFn = void (*)(const void*, int64_t, const float*, int64_t, const float*, float*);

template <bool kFused, int... kIs>
constexpr std::array<BlockFn, sizeof...(kIs)> block_table(std::integer_sequence<int, kIs...>) {
  return {&block_dot<kIs + 1, kFused>...};
}

const std::array<std::array<BlockFn, kMaxRows>, 2> kBlockFns = {
    block_table<false>(std::make_integer_sequence<int, kMaxRows>()),
    block_table<true>(std::make_integer_sequence<int, kMaxRows>())};

QL_TARGET_AVX2 void decode_chunk(const uint8_t* codes, int64_t kc, float* out) {
  for (int64_t k = 0; k < kc; ++k) {
    __m256 a;
    __m256 b;
    decode16(codes + k * kPanelN, &a, &b);
    _mm256_store_ps(out + k * kPanelN, a);
    _mm256_store_ps(out + k * kPanelN + 8, b);
  }
}

void run_panel(const fp8_cpu::Fp8Panels& w, const float* x, int64_t M, int64_t pnl, float* panel,
               float* yt, MatrixView y) {
  const bool fused = M <= kMaxRows;
  std::fill(yt, yt + M * kPanelN, 0.0f);
  for (int64_t c = 0; c < w.chunks(); ++c) {
    const uint8_t* chunk_codes = w.chunk_codes(pnl, c);
    if (!fused) decode_chunk(chunk_codes, w.chunk_k, panel);
    for (int64_t m0 = 0; m0 < M; m0 += kMaxRows) {
      const int64_t rows = std::min<int64_t>(kMaxRows, M - m0);
      kBlockFns[fused][rows - 1](fused ? static_cast<const void*>(chunk_codes) : panel, w.chunk_k,
                                 x + m0 * w.Kp + c * w.chunk_k, w.Kp, w.panel_scales(pnl, c),
                                 yt + m0 * kPanelN);
    }
  }
  fp8_cpu::store_panel_rows(w, yt, kPanelN, pnl, 1, y);
}

#endif  // __x86_64__

class PreparedFp8W8a16Avx2 : public PreparedLinear {
 public:
  PreparedFp8W8a16Avx2(const LinearProblem& problem, fp8_cpu::Fp8Panels panels)
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
    const ThreadBudget budget(ctx.threads, w_.panels());  // shared fairly with concurrent calls
    const int threads = budget.threads();
    fp8_cpu::activations_to_f32(x, w_.Kp, b.xf, threads);
#pragma omp parallel num_threads(threads)
    {
      alignas(32) float panel[fp8_cpu::kMaxChunkK * kPanelN];
      float* yt = b.yt + static_cast<int64_t>(omp_get_thread_num()) * M * kPanelN;
#pragma omp for schedule(dynamic, 4)
      for (int64_t pnl = 0; pnl < w_.panels(); ++pnl) {
        run_panel(w_, b.xf, M, pnl, panel, yt, y);
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
    float* xf = nullptr;  // x as f32 [M, Kp]
    float* yt = nullptr;  // a panel's accumulators per thread
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * w_.Kp);
    b.yt = c.take<float>(int64_t{max_threads()} * M * kPanelN);
    return b;
  }

  fp8_cpu::Fp8Panels w_;
};

class Fp8W8a16Avx2 : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    fp8_cpu::IsaNeeds needs;
    needs.avx2 = needs.fma = needs.f16c = true;
    return fp8_cpu::check_fp8(problem, device, Fp8Mode::kW8A16, needs);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(
        fp8_cpu::Fp8Panels panels,
        fp8_cpu::make_panels(*w, fp8_cpu::chunk_k_for(problem, Fp8Mode::kW8A16),
                             fp8_cpu::PanelLayout::kRows, fp8_cpu::prepare_threads()));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedFp8W8a16Avx2>(problem, std::move(panels)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_fp8_w8a16_avx2() {
  static const Fp8W8a16Avx2 kernel;
  return kernel;
}

}  // namespace qlinear
