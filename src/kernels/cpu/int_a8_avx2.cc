// cpu.int.a8.avx2 | scheme: 4- or 8-bit int (AWQ, GPTQ, AutoRound, compressed-tensors), sym or
//   zero points, act-order, with int8 activations -- only when asked for with --int8-activations
// after prepare: the 64-column tiles of int_tiles.h (GPTQ words, f16/bf16/f32 scales and u8 zeros
//   per group and tile), unchanged codes (zero offset 0)
// math: each activation row quantized to int8 per row and weight group (int_a8_avx2.h), then per
//   group and column acc = sum code * x_i8 in int32, y += s_w * s_x * (acc - z * sum x_i8):
//   4 bits: vpmaddubsw (u8 nibble x s8 activation, two products per int16 lane, |.| <= 3810),
//     8 of them summed in int16 (<= 30480), then vpmaddwd with ones into int32;
//   8 bits: vpmaddubsw would saturate (255 * 127 * 2 = 64770 > 32767), so the codes are
//     zero-extended to int16 lanes (one AND, one shift) and multiplied with the sign-extended
//     activation bytes by vpmaddwd (two products per int32 lane)
// limits: M <= kAvx2MaxRows (128); group_size % 8 == 0, dividing K (any with act-order), and
//   small enough for int32 sums (max_group_for_bits); any N (ragged tile zero-padded); no 2-bit
// accuracy: weights exact; activations per activation_quant.h (the a8 contract); the integer
//   sums and the zero-point term are exact, then f32 (one conversion, scale product, fma)
// tested on: AMD EPYC Zen 3 (AVX2 + FMA + F16C, 2 vCPUs)
#include "kernels/cpu/int_a8_avx2.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/int_a8_tiles.h"
#include "kernels/cpu/int_tiles.h"
#include "kernels/cpu/thread_budget.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/group_params_avx2.h"
#endif

namespace qlinear {
namespace int_a8 {
namespace {

using int_tiles::kTileN;
using int_tiles::TiledWeights;

constexpr std::string_view kName = "cpu.int.a8.avx2";
// Steps (256-byte rows of a tile) the decode prefetches ahead of the one it multiplies (a pass of
// two or more rows reads 128 of each 256 bytes).
constexpr int64_t kPrefetchSteps = 16;
// Rows of one job: every row of a call.
constexpr int64_t kRowChunk = kAvx2MaxRows;

// The quantized activation rows of one call (in the caller's workspace).
struct A8Avx2Rows {
  int64_t stride = 0;               // u32 quads per row (K / 4)
  int64_t groups = 0;               // weight groups per row
  const uint32_t* quads = nullptr;  // [M, stride]
  const float* scales = nullptr;    // [M, groups]
  const int32_t* qsums = nullptr;   // [M, groups]
};

}  // namespace
}  // namespace int_a8
}  // namespace qlinear

#if defined(__x86_64__)

// Everything below is compiled for AVX2 (GCC's target pragma; clang, which ignores it, applies
// the same target attribute to every function in the region).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace qlinear::int_a8 {
namespace {

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline int32_t horizontal_sum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Steps of 4-bit products an int16 accumulator may sum before it is widened: each step adds two
// vpmaddubsw results of at most 2 * 15 * 127 = 3810, so 4 steps stay within 30480 < 2^15.
constexpr int kInt16Steps = 4;

// kRows activation rows x 8*kVecs columns (from column c0 of the tile) over all of K, added into
// y[i] (8*kVecs floats each).
template <int kRows, int kBits, int kVecs, int kDepth>
void block(const TiledWeights& w, const A8Avx2Rows& rows, int64_t tile, int64_t c0, int64_t r,
           float* const* y) {
  constexpr int kQuads = kBits == 4 ? 2 : 1;
  // kDepth steps of int16 sums per widening (vpmaddwd with ones); 8 bits always widen.
  static_assert(kDepth >= 1 && kDepth <= kInt16Steps && (kBits == 4 || kDepth == 1));
  const __m256i nibbles = _mm256_set1_epi8(0x0F);
  const __m256i low_bytes = _mm256_set1_epi16(0x00FF);
  const __m256i ones = _mm256_set1_epi16(1);
  const uint32_t* q = w.tile_q(tile) + c0;
  const void* scales = w.tile_scales(tile);
  const uint8_t* zeros = w.tile_zeros(tile);
  const __m256i symmetric_zero = _mm256_set1_epi32(1 << (kBits - 1));
  const uint32_t* x[kRows];
  for (int i = 0; i < kRows; ++i) x[i] = rows.quads + (r + i) * rows.stride;
  for (int64_t g = 0; g < w.groups; ++g) {
    __m256i acc[kRows][kVecs];
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_setzero_si256();
    }
    const int64_t d_end = (g + 1) * w.group_steps;
    for (int64_t d0 = g * w.group_steps; d0 < d_end; d0 += kDepth) {
      const int64_t d1 = std::min(d0 + kDepth, d_end);
      __m256i sum16[kRows][kVecs];
      for (int i = 0; i < kRows; ++i) {
        for (int j = 0; j < kVecs; ++j) sum16[i][j] = _mm256_setzero_si256();
      }
      for (int64_t d = d0; d < d1; ++d) {
        const uint32_t* words = q + d * kTileN;
        for (int line = 0; line < kVecs / 2; ++line) {
          _mm_prefetch(reinterpret_cast<const char*>(words + kPrefetchSteps * kTileN + 16 * line),
                       _MM_HINT_T0);
        }
        if constexpr (kBits == 4) {
          __m256i xe[kRows];
          __m256i xo[kRows];
          for (int i = 0; i < kRows; ++i) {
            xe[i] = _mm256_set1_epi32(static_cast<int>(x[i][d * kQuads]));
            xo[i] = _mm256_set1_epi32(static_cast<int>(x[i][d * kQuads + 1]));
          }
          for (int j = 0; j < kVecs; ++j) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * j));
            const __m256i even = _mm256_and_si256(raw, nibbles);
            const __m256i odd = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibbles);
            for (int i = 0; i < kRows; ++i) {
              const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(even, xe[i]),
                                                 _mm256_maddubs_epi16(odd, xo[i]));
              sum16[i][j] = _mm256_add_epi16(sum16[i][j], p);
            }
          }
        } else {
          // Codes (c0, c2) and (c1, c3) of a word as int16 lanes; the quad's bytes sign-extended
          // to the matching int16 pairs (x0, x2) and (x1, x3).
          __m256i x02[kRows];
          __m256i x13[kRows];
          for (int i = 0; i < kRows; ++i) {
            const __m256i quad = _mm256_set1_epi32(static_cast<int>(x[i][d]));
            x02[i] = _mm256_srai_epi16(_mm256_slli_epi16(quad, 8), 8);
            x13[i] = _mm256_srai_epi16(quad, 8);
          }
          for (int j = 0; j < kVecs; ++j) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * j));
            const __m256i c02 = _mm256_and_si256(raw, low_bytes);
            const __m256i c13 = _mm256_srli_epi16(raw, 8);
            for (int i = 0; i < kRows; ++i) {
              acc[i][j] = _mm256_add_epi32(
                  acc[i][j],
                  _mm256_add_epi32(_mm256_madd_epi16(c02, x02[i]), _mm256_madd_epi16(c13, x13[i])));
            }
          }
        }
      }
      if constexpr (kBits == 4) {
        for (int i = 0; i < kRows; ++i) {
          for (int j = 0; j < kVecs; ++j) {
            acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(sum16[i][j], ones));
          }
        }
      }
    }
    // acc - z * sum(x_i8) = sum (code - z) * x_i8 is exact in int32 (|.| <= 255 * 127 * group <
    // 2^31: max_group_for_bits); then one conversion and y += (s_w * s_x) * it.
    for (int j = 0; j < kVecs; ++j) {
      const int64_t at = g * kTileN + c0 + 8 * j;
      const __m256 sw = int_tiles::load_scales8_avx2(w, scales, at);
      const __m256i z =
          zeros == nullptr
              ? symmetric_zero
              : _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zeros + at)));
      for (int i = 0; i < kRows; ++i) {
        const int64_t at_row = (r + i) * rows.groups + g;
        const __m256i zero_term = _mm256_mullo_epi32(z, _mm256_set1_epi32(rows.qsums[at_row]));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[i][j], zero_term));
        const __m256 scale = _mm256_mul_ps(sw, _mm256_set1_ps(rows.scales[at_row]));
        _mm256_storeu_ps(y[i] + 8 * j, _mm256_fmadd_ps(dot, scale, _mm256_loadu_ps(y[i] + 8 * j)));
      }
    }
  }
}

// Rows [r, r + kRows) of a tile in passes of 8 * kVecs columns. One row (decode) takes the whole
// tile per pass, so each step is one contiguous 256-byte read, and widens every step (the 8
// accumulators fill the registers); two rows take 32 columns and widen every 2 steps.
// Measured on the 2-vCPU Zen 3 VM (w4 g128, 2048x8192): M = 1, 2 threads, weights from DRAM,
// 24-27 GB/s against 19-21 GB/s for 32 columns with int16 sums over 4 steps; M = 15, one
// thread, 3.8-6.2 ms against 7.1-7.8 ms widening every step (the VM was shared; noisy).
template <int kRows>
void rows_of_tile(const TiledWeights& w, const A8Avx2Rows& rows, int64_t tile, int64_t r,
                  int64_t r0, float* ytile) {
  constexpr int kVecs = kRows == 1 ? 8 : 4;
  constexpr int kDepth = kRows == 1 ? 1 : 2;
  for (int64_t c0 = 0; c0 < kTileN; c0 += 8 * kVecs) {
    float* y[kRows];
    for (int i = 0; i < kRows; ++i) y[i] = ytile + (r + i - r0) * kTileN + c0;
    if (w.bits == 4) {
      block<kRows, 4, kVecs, kDepth>(w, rows, tile, c0, r, y);
    } else {
      block<kRows, 8, kVecs, 1>(w, rows, tile, c0, r, y);
    }
  }
}

void rows_1(const TiledWeights& w, const A8Avx2Rows& rows, int64_t tile, int64_t r, int64_t r0,
            float* ytile) {
  rows_of_tile<1>(w, rows, tile, r, r0, ytile);
}

void rows_2(const TiledWeights& w, const A8Avx2Rows& rows, int64_t tile, int64_t r, int64_t r0,
            float* ytile) {
  rows_of_tile<2>(w, rows, tile, r, r0, ytile);
}

// Codes x / s rounded to nearest even (the default MXCSR mode, as std::nearbyint), clamped to
// +-127.
inline __m256i int8_codes(__m256 x, __m256 s) {
  const __m256i q = _mm256_cvtps_epi32(_mm256_div_ps(x, s));
  return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-127)), _mm256_set1_epi32(127));
}

// Eight int32 codes (|q| <= 127) as eight bytes in the order `order` picks.
inline void store_bytes(__m256i q, __m256i order, uint8_t* out) {
  const __m256i p = _mm256_permutevar8x32_epi32(q, order);
  const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packs_epi16(w16, w16));
}

// Rows [r0, r1) of one tile: blocks of 2 rows and one of 1.
void tile_job_a8_avx2(const TiledWeights& w, const A8Avx2Rows& rows, int64_t tile, int64_t r0,
                      int64_t r1, float* ytile) {
  int64_t r = r0;
  for (; r + 2 <= r1; r += 2) rows_2(w, rows, tile, r, r0, ytile);
  if (r < r1) rows_1(w, rows, tile, r, r0, ytile);
}

}  // namespace

void quantize_rows_a8_avx2(const float* x, int64_t M, int64_t K, int64_t group_size, int bits,
                           uint32_t* quads, float* scales, int32_t* qsums) {
  const int64_t groups = K / group_size;
  const __m256i order = bits == 4 ? _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)
                                  : _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 infinity = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  auto* bytes = reinterpret_cast<uint8_t*>(quads);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* xs = x + m * K + g * group_size;
      uint8_t* out = bytes + m * K + g * group_size;
      __m256 absmax = _mm256_setzero_ps();
      int nonfinite = 0;
      for (int64_t i = 0; i < group_size; i += kAvx2ColumnRun) {
        const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(xs + i));
        // Not below infinity (infinity itself, or NaN: unordered) marks the group non-finite.
        nonfinite |= _mm256_movemask_ps(_mm256_cmp_ps(a, infinity, _CMP_NLT_UQ));
        absmax = _mm256_max_ps(absmax, a);
      }
      if (nonfinite != 0) {  // as the reference: NaN scale, zero codes
        scales[m * groups + g] = std::numeric_limits<float>::quiet_NaN();
        std::fill(out, out + group_size, uint8_t{0});
        qsums[m * groups + g] = 0;
        continue;
      }
      const float s = std::max(horizontal_max(absmax) / 127.0f, kInt8ActScaleFloor);
      scales[m * groups + g] = s;
      const __m256 sv = _mm256_set1_ps(s);
      __m256i sum = _mm256_setzero_si256();
      for (int64_t i = 0; i < group_size; i += kAvx2ColumnRun) {
        const __m256i q = int8_codes(_mm256_loadu_ps(xs + i), sv);
        sum = _mm256_add_epi32(sum, q);
        store_bytes(q, order, out + i);
      }
      qsums[m * groups + g] = horizontal_sum(sum);
    }
  }
}

}  // namespace qlinear::int_a8

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace qlinear::int_a8 {
// Not x86-64: check() rejects the kernel before any run.
namespace {
void tile_job_a8_avx2(const int_tiles::TiledWeights&, const A8Avx2Rows&, int64_t, int64_t, int64_t,
                      float*) {}
}  // namespace
void quantize_rows_a8_avx2(const float*, int64_t, int64_t, int64_t, int, uint32_t*, float*,
                           int32_t*) {}
}  // namespace qlinear::int_a8

#endif  // __x86_64__

namespace qlinear {
namespace int_a8 {
namespace {

class A8Avx2Linear final : public PreparedLinear {
 public:
  A8Avx2Linear(const LinearProblem& problem, TiledWeights w)
      : PreparedLinear(problem, Location::host()), w_(std::move(w)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    const float* xs = int_tiles::rows_in_k_order(x, w_, b.xf, b.permuted);
    quantize_rows_a8_avx2(xs, M, w_.K, w_.K / w_.groups, w_.bits, b.quads, b.scales, b.qsums);
    A8Avx2Rows rows;
    rows.stride = w_.K / 4;
    rows.groups = w_.groups;
    rows.quads = b.quads;
    rows.scales = b.scales;
    rows.qsums = b.qsums;
    const ThreadBudget budget(ctx.threads, w_.tiles);  // shared with concurrent calls
    int_tiles::for_each_tile_job(
        w_, M, 1, y, budget.threads(),
        [&](int64_t tile, int64_t r0, int64_t r1, float* ytile) {
          tile_job_a8_avx2(w_, rows, tile, r0, r1, ytile);
        },
        kRowChunk, b.ytiles);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;        // x as f32 [M, k_in]
    float* permuted = nullptr;  // act-order: x[:, perm] [M, K]
    uint32_t* quads = nullptr;  // [M, K / 4]
    float* scales = nullptr;    // [M, groups]
    int32_t* qsums = nullptr;   // [M, groups]
    float* ytiles = nullptr;    // a job's output tile per thread
  };

  // The call's buffers, in one order for workspace_bytes() and do_run().
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.xf = c.take<float>(M * w_.k_in);
    if (!w_.perm.empty()) b.permuted = c.take<float>(M * w_.K);
    b.quads = c.take<uint32_t>(M * w_.K / 4);
    b.scales = c.take<float>(M * w_.groups);
    b.qsums = c.take<int32_t>(M * w_.groups);
    b.ytiles = c.take<float>(int64_t{max_threads()} * kRowChunk * kTileN);
    return b;
  }

  TiledWeights w_;
};

class A8Avx2Kernel final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }
  std::vector<int64_t> m_breakpoints() const override { return {kAvx2MaxRows + 1}; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    QL_REQUIRE(require_platform(device, Platform::kCpu));
    QL_REQUIRE(int_tiles::require_isa(int_tiles::Isa::kAvx2, device.cpu));
    QL_REQUIRE(require_scheme(problem, WeightScheme::kInt));
    if (problem.bits != 4 && problem.bits != 8) {
      return Verdict::reject(Reason::kBits, fmt::format("bits={}; needs 4 or 8", problem.bits));
    }
    QL_REQUIRE(require_int_activations(problem, /*int8_kernel=*/true));
    QL_REQUIRE(require_io_dtypes(problem));
    QL_REQUIRE(int_tiles::require_tile_groups(problem, kAvx2ColumnRun,
                                              "the int8 quantizer's runs of 8 columns"));
    if (problem.group_size > max_group_for_bits(problem.bits)) {
      return Verdict::reject(Reason::kGroupSize,
                             fmt::format("group_size={} > {}: int32 accumulators could overflow",
                                         problem.group_size, max_group_for_bits(problem.bits)));
    }
    QL_REQUIRE(require_m_range(problem, 1, kAvx2MaxRows));
    return Verdict::accept();
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(TiledWeights t, int_tiles::tile_for_kernel(*this, weights, problem, device,
                                                                   /*int8_activations=*/true));
    return std::unique_ptr<PreparedLinear>(std::make_unique<A8Avx2Linear>(problem, std::move(t)));
  }
};

}  // namespace
}  // namespace int_a8

const LinearKernel& kernel_cpu_int_a8_avx2() {
  static const int_a8::A8Avx2Kernel kernel;
  return kernel;
}

}  // namespace qlinear
