// The column-tiled layout shared by the native CPU integer kernels (cpu.w4a16.*, cpu.w8a16.*,
// cpu.int.generic), the activation rows each ISA consumes, and the OpenMP job runner.
//
// Layout after prepare: N is cut into tiles of 64 columns (the last one zero-padded). A tile
// stores its packed words as u32 [steps, 64] with steps = K*bits/32: word (d, c) is the
// canonical GPTQ word of rows d*pf .. d*pf+pf-1 of column 64*tile + c (rows taken in act-order
// order when g_idx is present), so one tile is one contiguous stream. Per group, the kernels
// compute y = sum_g s_g * (sum_k code*x) - sz_g * (sum_k x), with sz = s * (z + offset)
// (offset: the bias an ISA adds to codes when it decodes them). Scales are stored [groups, 64]
// per tile in the narrowest of f16 / bf16 / f32 that holds every scale of the layer exactly
// (checkpoints store f16 or bf16), zero points as u8 [groups, 64] (none when symmetric), and
// sz is formed per group at run time (group_params): decode streams the weights once, and f32
// s and s*z per group were 12% more bytes than the 4-bit codes of a g128 layer.
//
// Act-order: perm = stable argsort(g_idx); weight rows are permuted at prepare and activation
// columns at run (x' = x[:, perm]), so every group is a contiguous run of group_size rows. A
// group with fewer rows (a row-parallel TP shard holds part of each group) is padded to
// group_size with rows whose activation is 0 (perm = -1), so the kernels never see a ragged group.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/cpu/output_store.h"
#include "kernels/kernel.h"

namespace qlinear::int_tiles {

inline constexpr int64_t kTileN = 64;
// Rows of activations one job handles: a multiple of the panel engine's row block (6, 2, 1)
// and of 2 (hi/lo row pairs stay in one job).
inline constexpr int64_t kRowChunk = 96;

// What the avx512 inline decode adds to every 4-bit field (it decodes a field f as the bf16
// number 128 + f); an 8-bit code is two fields lo + 16*hi there, so it carries 128 * 17.
inline constexpr float kAvx512Offset4 = 128.0f;
inline constexpr float kAvx512Offset8 = 128.0f * 17.0f;

// kAmx: the avx512 kernels' layout and rows, with the products of blocks of 16 activation rows on
// AMX tiles (int_panel_amx.cc).
enum class Isa { kGeneric, kAvx2, kAvx512, kAmx };

// The first feature the kernels of `isa` need that `cpu` lacks ("" when none; kGeneric: none).
std::string_view missing_isa(Isa isa, const CpuFeatures& cpu);
// x86 ISA variants are compiled on x86-64 only.
bool isa_compiled(Isa isa);
// The verdict of a kernel of `isa` on `cpu`: not-compiled off x86-64, missing-isa naming the
// first lacking feature.
Verdict require_isa(Isa isa, const CpuFeatures& cpu);
// The tile layout's group rules: group_size a multiple of `multiple` (the rows per packed word,
// or a kernel's own run length, named by `unit`), dividing K unless act-order (which pads every
// group to group_size rows).
Verdict require_tile_groups(const LinearProblem& problem, int multiple, std::string_view unit);

struct TiledWeights {
  int bits = 4;
  int64_t K = 0;     // weight rows: the layer's K, or with act-order the padded group rows
  int64_t k_in = 0;  // activation columns (the problem's K)
  int64_t N = 0;
  int64_t tiles = 0;
  int64_t steps = 0;           // u32 words per column: K*bits/32
  int64_t group_steps = 0;     // words per group
  int64_t groups = 0;          // K / group_size
  Tensor q;                    // u32 [tiles, steps, 64], or per tile [64 / pass_cols, steps,
                               // pass_cols] after split_tile_passes
  int64_t pass_cols = kTileN;  // columns of one contiguous pass of a tile's codes
  Tensor scales;               // f16, bf16 or f32 [tiles, groups, 64]
  Tensor zeros;                // u8 [tiles, groups, 64]; empty: symmetric (2^(bits-1) everywhere)
  float zero_offset = 0.0f;    // what the ISA adds to every code (see tile_int_weights)
  std::vector<int32_t> perm;   // [K]: the x column of each row, -1 for padding; empty: none
  std::vector<float> bias;     // [N] or empty

  const uint32_t* tile_q(int64_t tile) const {
    return q.data_as<uint32_t>() + tile * steps * kTileN;
  }
  // The codes of columns [c0, c0 + pass_cols - c0 % pass_cols) of a tile: word (d, c0 + j) is at
  // [d * pass_cols + j].
  const uint32_t* pass_q(int64_t tile, int64_t c0) const {
    return tile_q(tile) + (c0 / pass_cols) * steps * pass_cols + c0 % pass_cols;
  }
  // The tile's scales, [groups, 64] elements of scales.dtype().
  const void* tile_scales(int64_t tile) const {
    return static_cast<const char*>(scales.data()) +
           tile * groups * kTileN * static_cast<int64_t>(dtype_size(scales.dtype()));
  }
  // The tile's zero points [groups, 64], or nullptr when symmetric.
  const uint8_t* tile_zeros(int64_t tile) const {
    return zeros.data() == nullptr ? nullptr : zeros.data_as<uint8_t>() + tile * groups * kTileN;
  }
  // z + offset of a symmetric layer.
  float symmetric_term() const { return static_cast<float>(1 << (bits - 1)) + zero_offset; }
  // Columns [c0, c0 + count) of group g of a tile in f32: s, and sz = s * (z + offset), exactly as
  // the vector loaders form them.
  void group_params(int64_t tile, int64_t g, int64_t c0, int64_t count, float* s, float* sz) const;
};

// The load-time repack of canonical int weights (4 or 8 bits, group_size a multiple of the rows
// per word, dividing K) into tiles; the kernels form sz = s * (z + zero_offset). Errors name
// `kernel` and the layer (act-order groups of unequal size).
Result<TiledWeights> tile_int_weights(const IntWeights& w, float zero_offset,
                                      std::string_view kernel, const Canonical& weights);
// Re-lays every tile's codes as kTileN / pass_cols passes of [steps, pass_cols] words, so a kernel
// that walks a tile in passes of pass_cols columns reads one contiguous stream per pass instead of
// part of every 256-byte step (a stride the hardware prefetchers follow late). pass_cols divides
// kTileN; the layout must still be row-major (pass_cols == kTileN).
void split_tile_passes(TiledWeights& w, int64_t pass_cols);
// prepare() of the kernels on unchanged codes (zero offset 0): the layer's own problem (from its
// weights, with the call's dtypes and M range, int8 activations as given) must pass
// kernel.check() on the device, else an error naming the layer; then the weights are tiled.
Result<TiledWeights> tile_for_kernel(const LinearKernel& kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device,
                                     bool int8_activations);

// Activation rows in the form an ISA consumes, for one call (in the caller's workspace).
struct Rows {
  int64_t count = 0;     // R rows (M, or 2M when each row is split into bf16 hi + lo)
  int rows_per_out = 1;  // 1, or 2 for hi/lo pairs (rows 2m, 2m+1 both feed output row m)
  const uint32_t* pairs = nullptr;  // avx512: [R, stride] bf16 pairs, see below
  int64_t stride = 0;  // u32 pairs per row (panel engine: chunk-major, see build_rows_avx512)
  const float* values = nullptr;  // avx2 / generic: [R, steps, 8] x per nibble (see rows_f32);
                                  // the avx2 panel engine: x [R, K]
  const float* sums = nullptr;    // [R, groups]: sum of the row's x over each group
};

// Calls fn(r, std::integral_constant<int, n>{}) over rows [r0, r1) in blocks of kMax rows and
// one last block of the remainder, so a micro-kernel gets its row count at compile time.
template <int kN, class Fn>
inline void row_block_remainder(int64_t count, int64_t r, Fn& fn) {
  if constexpr (kN > 0) {
    if (count == kN) {
      fn(r, std::integral_constant<int, kN>{});
      return;
    }
    row_block_remainder<kN - 1>(count, r, fn);
  }
}
template <int kMax, class Fn>
inline void for_row_blocks(int64_t r0, int64_t r1, Fn&& fn) {
  int64_t r = r0;
  for (; r + kMax <= r1; r += kMax) fn(r, std::integral_constant<int, kMax>{});
  row_block_remainder<kMax - 1>(r1 - r, r, fn);
}

// out[:, k] = x[:, perm[k]] (0 where perm[k] < 0) for M rows; x has k_in columns, out perm.size().
void permute_columns(const float* x, int64_t M, int64_t k_in, const std::vector<int32_t>& perm,
                     float* out);
// x's rows as f32 in the tiles' K order: into xf [M, k_in], then with act-order permuted into
// `permuted` [M, K]; returns the one that holds them.
const float* rows_in_k_order(ConstMatrixView x, const TiledWeights& w, float* xf, float* permuted);

// Runs job(tile, r0, r1, ytile) for every tile and chunk of `row_chunk` activation rows on
// `threads` OpenMP threads (statically, or dynamically for uneven jobs), then writes the chunk's
// output rows (rows / rows_per_out) of the tile, plus bias, into y [M, N] in y's dtype. ytiles
// holds row_chunk x 64 floats for each of max_threads() threads (the caller's workspace); each
// is zeroed before a job.
template <class Job>
void for_each_tile_job(const TiledWeights& w, int64_t rows, int rows_per_out, MatrixView y,
                       int threads, Job&& job, int64_t row_chunk, float* ytiles,
                       bool dynamic = false) {
  const int64_t chunks = (rows + row_chunk - 1) / row_chunk;
  const int64_t jobs = w.tiles * chunks;
  threads = static_cast<int>(std::min<int64_t>(threads, jobs));
  auto run_job = [&](int64_t j, float* ytile) {
    const int64_t tile = j / chunks;
    const int64_t r0 = (j % chunks) * row_chunk;
    const int64_t r1 = std::min(rows, r0 + row_chunk);
    const int64_t o0 = r0 / rows_per_out;
    const int64_t o1 = (r1 - 1) / rows_per_out + 1;
    std::fill(ytile, ytile + (o1 - o0) * kTileN, 0.0f);
    job(tile, r0, r1, ytile);
    const int64_t n0 = tile * kTileN;
    const int64_t width = std::min(kTileN, w.N - n0);
    const float* bias = w.bias.empty() ? nullptr : w.bias.data() + n0;
    const std::size_t elem = y.element_bytes();
    for (int64_t o = o0; o < o1; ++o) {
      store_output(ytile + (o - o0) * kTileN, bias, width, y.dtype(),
                   static_cast<std::byte*>(y.row(o)) + n0 * static_cast<int64_t>(elem));
    }
  };
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    float* ytile = ytiles + static_cast<int64_t>(omp_get_thread_num()) * row_chunk * kTileN;
    if (dynamic) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = 0; j < jobs; ++j) run_job(j, ytile);
    } else {
#pragma omp for schedule(static)
      for (int64_t j = 0; j < jobs; ++j) run_job(j, ytile);
    }
  }
}

// Computes rows [r0, r1) of one tile into ytile (rows are output rows r/rows_per_out - r0/rpo,
// 64 floats each, zeroed by the caller; accumulate into it).
using TileJob = void (*)(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0,
                         int64_t r1, float* ytile);

void tile_job_generic(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0, int64_t r1,
                      float* ytile);
#if defined(__x86_64__)
void tile_job_avx2(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0, int64_t r1,
                   float* ytile);
void tile_job_avx512(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0, int64_t r1,
                     float* ytile);
// The avx2 panel engine (int_panel_avx2.cc): per 64-row K chunk of a tile, dequantizes the codes
// once to f32 (s * code - s * z) and multiplies every row of the job with a 6 x 16 FMA kernel.
// Its rows: values = x [count, K], columns in the tiles' (act-order) order, one row per output.
void tile_job_panel_avx2(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0,
                         int64_t r1, float* ytile);
// The avx512 panel engine (int_panel_avx512.cc): per K chunk of a tile, decodes the codes once
// into exact bf16 pairs and runs every row of the job over them. Its rows pair activations
// (k, k+4) of each 8-row word for 4 bits (as tile_job_avx512) and (k, k+1) for 8 bits; 8-bit
// codes are decoded as themselves (offset 0: the kernel subtracts kAvx512Offset8 * s itself).
void tile_job_panel_avx512(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0,
                           int64_t r1, float* ytile);
// The AMX engine (int_panel_amx.cc): the panel engine's chunks, rows and epilogue, with the
// products of each block of up to 16 activation rows by the chunk's 64 columns on AMX tiles
// (TDPBF16PS, f32 accumulation per group segment, applied by the avx512 epilogue).
void tile_job_panel_amx(const TiledWeights& w, const Rows& rows, int64_t tile, int64_t r0,
                        int64_t r1, float* ytile);
// The panel of rows [k0, k1) of K of a tile's codes (int_panel_avx512.cc; k0, k1 multiples of
// the rows per word): 4-bit words into exact bf16 pairs 128 + nibble, pair 4 * (d - d0) + p =
// (nibble p, nibble p + 4) of word d; 8-bit words into pairs 2 * (d - d0) + h of the codes of rows
// (4d + 2h, 4d + 2h + 1). [pairs][kTileN] u32.
void decode_panel(const uint32_t* q, int bits, int64_t k0, int64_t k1, uint32_t* panel);
// The sizes of the avx512 rows of M activation rows: R rows of `stored` u32 pairs each.
struct Avx512RowsShape {
  int64_t count = 0;
  int rows_per_out = 1;
  int64_t stride = 0;
  int64_t stored = 0;
};
Avx512RowsShape avx512_rows_shape(const TiledWeights& w, int64_t M, bool split, bool panel);
// Builds the avx512 rows (hi, or hi + lo per row when split) from x [M, K] (f32, bf16 or f16;
// columns taken in w.perm order when act-order), for the inline kernel (panel = false) or the
// panel engine, on up to `threads` threads, into pairs [count * stored] and sums
// [count * groups]. Scratch per thread: hb_slots K u16 and perm_slots K floats (act-order only)
// for each of max_threads() threads.
Rows build_rows_avx512(const TiledWeights& w, ConstMatrixView x, bool split, bool panel,
                       int threads, uint32_t* pairs, float* sums, uint16_t* hb_slots,
                       float* perm_slots);
#endif

// The kernel object every native integer kernel file instantiates. `bits` is 4 or 8, or 0 for
// "4 or 8" (the generic kernel).
class IntTileKernel final : public LinearKernel {
 public:
  IntTileKernel(std::string_view name, int bits, Isa isa) : name_(name), bits_(bits), isa_(isa) {}
  std::string_view name() const override { return name_; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }
  Verdict check(const LinearProblem& problem, const Device& device) const override;
  std::vector<Engine> engines(const LinearProblem& problem) const override;
  std::vector<int64_t> m_breakpoints() const override;
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& device) const override;

 private:
  std::string_view name_;
  int bits_;
  Isa isa_;
};

// The avx512 path splits f32 activations into bf16 hi + lo (16 significand bits, relative error
// ~1e-6) at every M, and f16 activations (exact as hi + lo) only when M <= this: decode is
// memory-bound, so the second bf16 pass is free there; above it f16 is rounded to bf16.
inline constexpr int64_t kSplitMaxM = 4;

// The avx512 kernels use the panel engine from this many activation rows R (hi/lo rows counted)
// on, and the inline decode below it. Measured (2 threads, bf16 x): 8 bits, where the inline
// kernel pays two products per code, the panel wins from R = 12 (M = 16: 162-181 vs 137-173
// GFLOP/s; M = 128: ~300-350 vs ~150-195); 4 bits, whose inline decode (shift + vpternlogd) runs
// on otherwise idle integer pipes, the two engines are equal within noise at M = 64-256, so the
// panel takes over only for the largest blocks (it reads L1 instead of re-decoding per block).
inline constexpr int64_t kPanelMinRows4 = 256;
inline constexpr int64_t kPanelMinRows8 = 12;
// K rows per panel (64 pairs x 64 columns x 4 bytes = 16 KiB: stays in L1).
inline constexpr int64_t kPanelChunkRows = 128;
// At most this many rows per panel-engine job (its output tile: kPanelMaxRows x 64 floats).
inline constexpr int64_t kPanelMaxRows = 192;

// The AMX kernels (cpu.w4a16.amx, cpu.w8a16.amx) take M from this many rows on: a block of 16
// rows fills an AMX tile; below it the avx512 kernels (decode) keep the rows.
inline constexpr int64_t kAmxMinRows = 16;

// The AVX2 kernels use their panel engine (int_panel_avx2.cc) from this many activation rows on.
// Measured (2 threads, Zen 4 run as AVX2, 4 shapes, against the inline micro-kernel below 64 rows
// and against dequantized column blocks + cblas_sgemm from 64): 1.0-1.35x at M = 16-32,
// 1.3-3.7x at M = 64, 0.92-1.36x at M = 256; below 16 rows the inline kernel is faster.
inline constexpr int64_t kAvx2PanelMinRows = 16;

}  // namespace qlinear::int_tiles
