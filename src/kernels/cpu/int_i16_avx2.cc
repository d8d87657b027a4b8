// cpu.int.i16.avx2 | scheme: 4- or 8-bit int (AWQ, GPTQ, AutoRound, compressed-tensors), sym or
// zero points, act-order; f32, bf16 or f16 activations and outputs
// after prepare: the 64-column tiles of int_tiles.h (GPTQ words, f16/bf16/f32 scales and u8 zeros
// per group and tile), unchanged codes (zero offset 0), each tile's codes split into two
// contiguous 32-column passes (int_tiles::split_tile_passes)
// math: each activation row quantized to int16 per block of columns (int_i16_avx2.h), then per
// block and column acc = sum code * x_i16 in int32 (vpmaddwd: 16 products per instruction, codes
// only masked and shifted, never converted to float), y += s_w * s_x * (acc - z * sum x_i16)
// limits: M <= kMaxRows (15: decode and small batches); group_size % 8 == 0 and dividing K (any
// with act-order); any N (ragged tile zero-padded); no 2-bit; no --int8-activations
// accuracy: bf16/f16 x within 2^-16 of its block's max |x| per element (docs/design.md, "int16
// activations", for the bound); f32 x gets a residual int16 row: within 2^-31 of it
// tested on: AMD EPYC Zen 3 (AVX2 + FMA + F16C, 2 vCPUs)
#include "kernels/cpu/int_i16_avx2.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/int_tiles.h"
#include "kernels/cpu/thread_budget.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/cpu/group_params_avx2.h"
#endif

#define QLINEAR_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace qlinear {
namespace int_i16 {
namespace {

using int_tiles::kTileN;
using int_tiles::TiledWeights;

constexpr std::string_view kName = "cpu.int.i16.avx2";
// Columns of one pass over a tile (4 vectors of 8; rows_of_tile says why 4). prepare re-lays each
// tile's codes as two contiguous [steps, 32] passes: in the row-major tile a pass read 128 of
// every 256 bytes, a stride the hardware prefetchers follow late (Zen 3 VM, M = 1, 2 threads,
// weights from DRAM, alternated: 2048x8192 13.6-15.2 against 9.7-11.7 GB/s, both without
// software prefetch).
constexpr int kPassVecs = 4;
constexpr int64_t kPassCols = 8 * kPassVecs;
// Steps (128-byte rows of a pass) the decode prefetches ahead of the one it multiplies, both
// lines of each: same VM, 5 alternated rounds, medians of 2048x8192 / 8192x2048: 17.7 / 18.4 GB/s
// at 32 steps, 17.9 / 18.9 at 16, 15.0 / 15.7 without (prefetching only every other step's
// lines was slower than none).
constexpr int64_t kPrefetchSteps = 32;
// Rows of one job: every row of a call (hi/lo pairs of f32 activations included).
constexpr int64_t kRowChunk = 2 * kMaxRows;

// The quantized activation rows of one call (in the caller's workspace).
struct I16Rows {
  int64_t count = 0;                // R: M, or 2M with the residual rows of f32 activations
  int rows_per_out = 1;             // 2 when rows 2m, 2m + 1 (q and q_lo) both feed output row m
  int64_t blocks = 0;               // activation blocks per row
  int64_t block_steps = 0;          // packed words (steps) per block
  int64_t stride = 0;               // u32 pairs per row (K / 2)
  const uint32_t* pairs = nullptr;  // [R, stride]
  const float* scales = nullptr;    // [R, blocks]
  const int32_t* qsums = nullptr;   // [R, blocks]
};

#if defined(__x86_64__)

QLINEAR_AVX2 inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

QLINEAR_AVX2 inline int32_t horizontal_sum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// x / s rounded to nearest even (the default MXCSR mode, as std::nearbyint), clamped to +-32767.
QLINEAR_AVX2 inline __m256i int16_codes(__m256 x, __m256 s) {
  const __m256i q = _mm256_cvtps_epi32(_mm256_div_ps(x, s));
  return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-32767)), _mm256_set1_epi32(32767));
}

// Eight codes of consecutive columns as four u32 pairs in the kernel's order (`order` picks the
// pair partners, see int_i16_avx2.h).
QLINEAR_AVX2 inline void store_pairs(__m256i q, __m256i order, uint32_t* out) {
  const __m256i p = _mm256_permutevar8x32_epi32(q, order);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm_packs_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)));
}

// Field i of every 16-bit lane of 8 words: the code of row F*d + i (low lane) and of row
// F*d + F/2 + i (high lane), zero-extended to int16.
template <int kBits, int kField>
QLINEAR_AVX2 inline __m256i field(__m256i words, __m256i mask) {
  if constexpr (kField == 0) return _mm256_and_si256(words, mask);
  if constexpr (kField * kBits + kBits == 16) return _mm256_srli_epi16(words, 16 - kBits);
  return _mm256_and_si256(_mm256_srli_epi16(words, kField * kBits), mask);
}

// acc[i][j] += the products of field kField of step d's words v[j] with row i's pair for it.
// (A function, not a lambda: lambdas do not inherit the target attribute.)
template <int kRows, int kBits, int kVecs, int kField>
QLINEAR_AVX2 inline void accumulate_field(const __m256i* v, __m256i mask, const uint32_t* const* x,
                                          int64_t d, __m256i (&acc)[kRows][kVecs]) {
  constexpr int kPairs = 16 / kBits;
  __m256i xb[kRows];
  for (int i = 0; i < kRows; ++i) {
    xb[i] = _mm256_set1_epi32(static_cast<int>(x[i][d * kPairs + kField]));
  }
  for (int j = 0; j < kVecs; ++j) {
    const __m256i codes = field<kBits, kField>(v[j], mask);
    for (int i = 0; i < kRows; ++i) {
      acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(codes, xb[i]));
    }
  }
}

// kRows activation rows x 8*kVecs columns (from column c0 of the tile) over all of K, added into
// y[r] (8*kVecs floats each).
template <int kRows, int kBits, int kVecs>
QLINEAR_AVX2 void block(const TiledWeights& w, const I16Rows& rows, int64_t tile, int64_t c0,
                        int64_t r, float* const* y) {
  constexpr int kPairs = 16 / kBits;
  const __m256i mask = _mm256_set1_epi16(kBits == 4 ? 0x000F : 0x00FF);
  static_assert(8 * kVecs == kPassCols);
  const uint32_t* q = w.pass_q(tile, c0);
  const void* scales = w.tile_scales(tile);
  const uint8_t* zeros = w.tile_zeros(tile);
  const __m256i symmetric_zero = _mm256_set1_epi32(1 << (kBits - 1));
  const int64_t blocks_per_group = w.group_steps / rows.block_steps;
  const uint32_t* x[kRows];
  for (int i = 0; i < kRows; ++i) x[i] = rows.pairs + (r + i) * rows.stride;
  for (int64_t g = 0; g < w.groups; ++g) {
    for (int64_t b = g * blocks_per_group; b < (g + 1) * blocks_per_group; ++b) {
      __m256i acc[kRows][kVecs];
      for (int i = 0; i < kRows; ++i) {
        for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_setzero_si256();
      }
      const int64_t d_end = (b + 1) * rows.block_steps;
      for (int64_t d = b * rows.block_steps; d < d_end; ++d) {
        const uint32_t* words = q + d * kPassCols;
        _mm_prefetch(reinterpret_cast<const char*>(words + kPrefetchSteps * kPassCols),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(words + kPrefetchSteps * kPassCols + 16),
                     _MM_HINT_T0);
        __m256i v[kVecs];
        for (int j = 0; j < kVecs; ++j) {
          v[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * j));
        }
        if constexpr (kRows == 1 && kBits == 4) {
          // One row of 4-bit codes: the step's pairs stay in registers and each word is decoded
          // field by field into its accumulator (field-major order spilled 3 of the 4
          // accumulators; one Zen 3 core, weights in L3, 4096x4096: 15.0-19.7 against
          // 12.4-14.6 GB/s, 2048x2048 equal; 8 bits measured no better this way).
          __m256i xb[kPairs];
          for (int f = 0; f < kPairs; ++f) {
            xb[f] = _mm256_set1_epi32(static_cast<int>(x[0][d * kPairs + f]));
          }
          for (int j = 0; j < kVecs; ++j) {
            __m256i sum = _mm256_madd_epi16(field<kBits, 0>(v[j], mask), xb[0]);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(field<kBits, 1>(v[j], mask), xb[1]));
            if constexpr (kPairs == 4) {
              sum = _mm256_add_epi32(sum, _mm256_madd_epi16(field<kBits, 2>(v[j], mask), xb[2]));
              sum = _mm256_add_epi32(sum, _mm256_madd_epi16(field<kBits, 3>(v[j], mask), xb[3]));
            }
            acc[0][j] = _mm256_add_epi32(acc[0][j], sum);
          }
        } else {
          accumulate_field<kRows, kBits, kVecs, 0>(v, mask, x, d, acc);
          accumulate_field<kRows, kBits, kVecs, 1>(v, mask, x, d, acc);
          if constexpr (kPairs == 4) {
            accumulate_field<kRows, kBits, kVecs, 2>(v, mask, x, d, acc);
            accumulate_field<kRows, kBits, kVecs, 3>(v, mask, x, d, acc);
          }
        }
      }
      // acc - z * sum(x_i16) is exact in int32 (|.| <= 255 * 32767 * kMaxBlock < 2^31); then one
      // conversion and y += (s_w * s_x) * it.
      for (int j = 0; j < kVecs; ++j) {
        const int64_t at = g * kTileN + c0 + 8 * j;
        const __m256 sw = int_tiles::load_scales8_avx2(w, scales, at);
        const __m256i z = zeros == nullptr ? symmetric_zero
                                           : _mm256_cvtepu8_epi32(_mm_loadl_epi64(
                                                 reinterpret_cast<const __m128i*>(zeros + at)));
        for (int i = 0; i < kRows; ++i) {
          const int64_t at_row = (r + i) * rows.blocks + b;
          const __m256i zero_term = _mm256_mullo_epi32(z, _mm256_set1_epi32(rows.qsums[at_row]));
          const __m256 dot = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[i][j], zero_term));
          const __m256 scale = _mm256_mul_ps(sw, _mm256_set1_ps(rows.scales[at_row]));
          _mm256_storeu_ps(y[i] + 8 * j,
                           _mm256_fmadd_ps(dot, scale, _mm256_loadu_ps(y[i] + 8 * j)));
        }
      }
    }
  }
}

// Rows [r, r + kRows) of a tile in passes of kPassCols columns (each one contiguous stream).
template <int kRows>
QLINEAR_AVX2 void rows_of_tile(const TiledWeights& w, const I16Rows& rows, int64_t tile, int64_t r,
                               int64_t r0, float* ytile) {
  // 4 column vectors per pass: measured in L3 on one Zen 3 core (2048x2048, M = 1), 4-bit
  // 19.4-19.7 GB/s against 13-16 with 2 and 12.6-13.7 with 8 (8 spills the accumulators).
  for (int64_t c0 = 0; c0 < kTileN; c0 += kPassCols) {
    float* y[kRows];
    for (int i = 0; i < kRows; ++i) {
      y[i] = ytile + ((r + i) / rows.rows_per_out - r0 / rows.rows_per_out) * kTileN + c0;
    }
    if (w.bits == 4) {
      block<kRows, 4, kPassVecs>(w, rows, tile, c0, r, y);
    } else {
      block<kRows, 8, kPassVecs>(w, rows, tile, c0, r, y);
    }
  }
}

// Row blocks of 2 (a hi/lo pair stays together: r0 is even).
QLINEAR_AVX2 void tile_job(const TiledWeights& w, const I16Rows& rows, int64_t tile, int64_t r0,
                           int64_t r1, float* ytile) {
  int_tiles::for_row_blocks<2>(r0, r1, [&](int64_t r, auto count) {
    rows_of_tile<decltype(count)::value>(w, rows, tile, r, r0, ytile);
  });
}

#else

void tile_job(const TiledWeights&, const I16Rows&, int64_t, int64_t, int64_t, float*) {}

#endif  // __x86_64__

class I16Linear final : public PreparedLinear {
 public:
  I16Linear(const LinearProblem& problem, TiledWeights w)
      : PreparedLinear(problem, Location::host()),
        w_(std::move(w)),
        block_(activation_block(w_.K / w_.groups)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m, problem().act_dtype == DType::kF32);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    // f32 keeps f32 accuracy through the residual row; bf16 and f16 are 16-bit already.
    const bool split = x.dtype() == DType::kF32;
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M, split);
    if (carver.overflowed()) return workspace_overflow(kName);
    const float* xs = int_tiles::rows_in_k_order(x, w_, b.xf, b.permuted);
    quantize_rows_i16_avx2(xs, M, w_.K, block_, w_.bits, split, b.pairs, b.scales, b.qsums);
    I16Rows rows;
    rows.count = split ? 2 * M : M;
    rows.rows_per_out = split ? 2 : 1;
    rows.blocks = w_.K / block_;
    rows.block_steps = block_ / (32 / w_.bits);
    rows.stride = w_.K / 2;
    rows.pairs = b.pairs;
    rows.scales = b.scales;
    rows.qsums = b.qsums;
    const ThreadBudget budget(ctx.threads, w_.tiles);  // shared with concurrent calls
    int_tiles::for_each_tile_job(
        w_, rows.count, rows.rows_per_out, y, budget.threads(),
        [&](int64_t tile, int64_t r0, int64_t r1, float* ytile) {
          tile_job(w_, rows, tile, r0, r1, ytile);
        },
        kRowChunk, b.ytiles);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    float* xf = nullptr;        // x as f32 [M, k_in]
    float* permuted = nullptr;  // act-order: x[:, perm] [M, K]
    uint32_t* pairs = nullptr;  // [R, K / 2]
    float* scales = nullptr;    // [R, blocks]
    int32_t* qsums = nullptr;   // [R, blocks]
    float* ytiles = nullptr;    // a job's output tile per thread
  };

  // The call's buffers, in one order for workspace_bytes() and do_run().
  Buffers carve(WorkspaceCarver& c, int64_t M, bool split) const {
    Buffers b;
    const int64_t R = split ? 2 * M : M;
    const int64_t blocks = w_.K / block_;
    b.xf = c.take<float>(M * w_.k_in);
    if (!w_.perm.empty()) b.permuted = c.take<float>(M * w_.K);
    b.pairs = c.take<uint32_t>(R * w_.K / 2);
    b.scales = c.take<float>(R * blocks);
    b.qsums = c.take<int32_t>(R * blocks);
    b.ytiles = c.take<float>(int64_t{max_threads()} * kRowChunk * kTileN);
    return b;
  }

  TiledWeights w_;
  int64_t block_;
};

class I16Kernel final : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }
  std::vector<int64_t> m_breakpoints() const override { return {kMaxRows + 1}; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    QL_REQUIRE(require_platform(device, Platform::kCpu));
    QL_REQUIRE(int_tiles::require_isa(int_tiles::Isa::kAvx2, device.cpu));
    QL_REQUIRE(require_scheme(problem, WeightScheme::kInt));
    if (problem.bits != 4 && problem.bits != 8) {
      return Verdict::reject(Reason::kBits, fmt::format("bits={}; needs 4 or 8", problem.bits));
    }
    QL_REQUIRE(require_int_activations(problem, /*int8_kernel=*/false));
    QL_REQUIRE(require_io_dtypes(problem));
    QL_REQUIRE(int_tiles::require_tile_groups(problem, kColumnRun,
                                              "the int16 quantizer's runs of 8 columns"));
    QL_REQUIRE(require_m_range(problem, 1, kMaxRows));
    return Verdict::accept();
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& device) const override {
    QL_ASSIGN_OR_RETURN(TiledWeights t, int_tiles::tile_for_kernel(*this, weights, problem, device,
                                                                   /*int8_activations=*/false));
    int_tiles::split_tile_passes(t, kPassCols);
    return std::unique_ptr<PreparedLinear>(std::make_unique<I16Linear>(problem, std::move(t)));
  }
};

}  // namespace

int64_t activation_block(int64_t group_size) {
  if (group_size <= kMaxBlock) return group_size;
  for (int64_t block = kMaxBlock / kColumnRun * kColumnRun; block > kColumnRun;
       block -= kColumnRun) {
    if (group_size % block == 0) return block;
  }
  return kColumnRun;
}

#if defined(__x86_64__)

QLINEAR_AVX2 void quantize_rows_i16_avx2(const float* x, int64_t M, int64_t K, int64_t block,
                                         int bits, bool split, uint32_t* pairs, float* scales,
                                         int32_t* qsums) {
  const int64_t blocks = K / block;
  const int64_t stride = K / 2;
  const int64_t per_input = split ? 2 : 1;
  const __m256i order = bits == 4 ? _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)
                                  : _mm256_setr_epi32(0, 2, 1, 3, 4, 6, 5, 7);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 infinity = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  for (int64_t m = 0; m < M; ++m) {
    const int64_t row = m * per_input;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xs = x + m * K + b * block;
      uint32_t* hi = pairs + row * stride + b * block / 2;
      uint32_t* lo = hi + stride;
      __m256 absmax = _mm256_setzero_ps();
      int nonfinite = 0;
      for (int64_t i = 0; i < block; i += kColumnRun) {
        const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(xs + i));
        // Not below infinity (infinity itself, or NaN: unordered) marks the block non-finite.
        nonfinite |= _mm256_movemask_ps(_mm256_cmp_ps(a, infinity, _CMP_NLT_UQ));
        absmax = _mm256_max_ps(absmax, a);
      }
      const float s =
          nonfinite != 0 ? std::numeric_limits<float>::quiet_NaN()
                         : std::max(horizontal_max(absmax) / kInt16ActMaxCode, kInt16ActScaleFloor);
      const float s_lo = s * kInt16ActResidualScale;
      scales[row * blocks + b] = s;
      if (split) scales[(row + 1) * blocks + b] = s_lo;
      if (nonfinite != 0) {  // as the reference: NaN scales, zero codes
        std::fill(hi, hi + block / 2, 0u);
        qsums[row * blocks + b] = 0;
        if (split) {
          std::fill(lo, lo + block / 2, 0u);
          qsums[(row + 1) * blocks + b] = 0;
        }
        continue;
      }
      const __m256 sv = _mm256_set1_ps(s);
      const __m256 s_lov = _mm256_set1_ps(s_lo);
      __m256i sum = _mm256_setzero_si256();
      __m256i sum_lo = _mm256_setzero_si256();
      for (int64_t i = 0; i < block; i += kColumnRun) {
        const __m256 xv = _mm256_loadu_ps(xs + i);
        const __m256i q = int16_codes(xv, sv);
        sum = _mm256_add_epi32(sum, q);
        store_pairs(q, order, hi + i / 2);
        if (split) {
          const __m256 residual = _mm256_fnmadd_ps(sv, _mm256_cvtepi32_ps(q), xv);
          const __m256i q_lo = int16_codes(residual, s_lov);
          sum_lo = _mm256_add_epi32(sum_lo, q_lo);
          store_pairs(q_lo, order, lo + i / 2);
        }
      }
      qsums[row * blocks + b] = horizontal_sum(sum);
      if (split) qsums[(row + 1) * blocks + b] = horizontal_sum(sum_lo);
    }
  }
}

#else

void quantize_rows_i16_avx2(const float*, int64_t, int64_t, int64_t, int, bool, uint32_t*, float*,
                            int32_t*) {}  // check() rejects the kernel before any run

#endif  // __x86_64__

}  // namespace int_i16

const LinearKernel& kernel_cpu_int_i16_avx2() {
  static const int_i16::I16Kernel kernel;
  return kernel;
}

}  // namespace qlinear
