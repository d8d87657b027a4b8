// The large-M path of the AVX2 integer kernels (cpu.w4a16.avx2, cpu.w8a16.avx2): their f32 FMA
// micro-kernel re-decodes every code for each block of rows, which falls below OpenBLAS sgemm on
// dequantized weights from a few dozen rows on (bench/results/cpu.md: 0.29-0.61 x sgemm at
// M = 256). From kAvx2SgemmMinRows rows the tiles are dequantized, a block of columns at a time
// (never the whole layer), into f32 and multiplied by cblas_sgemm: the blas family's method on
// the kernel's own prepared tiles.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/dequant_tile.h"
#include "kernels/cpu/int_tiles.h"

namespace qlinear::int_tiles {

namespace {

// W[k, n] = s * code - s * z for the columns of tiles [t0, t1), K rows in the tiles' (act-order
// sorted) order, like x. Single-threaded: OpenMP workers spinning after a parallel region would
// take the cores from OpenBLAS's own threads (measured: 0.23-0.37 x sgemm with it).
__attribute__((target("avx2,fma"))) void dequantize_block(const TiledWeights& w, int64_t t0,
                                                          int64_t t1, int64_t width, float* block) {
  const int rows_per_word = 32 / w.bits;
  const uint32_t mask = (1u << w.bits) - 1u;
  const int64_t group_size = w.K / w.groups;
  // s and sz of every group of the block's tiles, formed once: [tile][group][64] each.
  std::vector<float> params(static_cast<size_t>(2 * (t1 - t0) * w.groups * kTileN));
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t g = 0; g < w.groups; ++g) {
      float* at = params.data() + 2 * ((t - t0) * w.groups + g) * kTileN;
      w.group_params(t, g, 0, kTileN, at, at + kTileN);
    }
  }
  for (int64_t k = 0; k < w.K; ++k) {
    const int64_t d = k / rows_per_word;
    const int shift = w.bits * static_cast<int>(k % rows_per_word);
    const int64_t g = k / group_size;
    float* row = block + k * width;
    for (int64_t t = t0; t < t1; ++t) {
      const uint32_t* words = w.tile_q(t) + d * kTileN;
      const float* s = params.data() + 2 * ((t - t0) * w.groups + g) * kTileN;
      const float* sz = s + kTileN;
      const int64_t c0 = (t - t0) * kTileN;
      const int64_t count = std::min(kTileN, width - c0);
      for (int64_t c = 0; c < count; ++c) {
        const auto code = static_cast<float>(static_cast<int32_t>((words[c] >> shift) & mask));
        row[c0 + c] = s[c] * code - sz[c];
      }
    }
  }
}

}  // namespace

void run_tiles_sgemm(const TiledWeights& w, const float* x, int64_t M, float* y) {
  const int64_t tiles_per_block = std::max<int64_t>(1, kBlasTileN / kTileN);
  std::vector<float> block(static_cast<size_t>(w.K * tiles_per_block * kTileN));
  for (int64_t t0 = 0; t0 < w.tiles; t0 += tiles_per_block) {
    const int64_t t1 = std::min(w.tiles, t0 + tiles_per_block);
    const int64_t n0 = t0 * kTileN;
    const int64_t width = std::min(w.N, t1 * kTileN) - n0;
    dequantize_block(w, t0, t1, width, block.data());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(M),
                static_cast<blasint>(width), static_cast<blasint>(w.K), 1.0f, x,
                static_cast<blasint>(w.K), block.data(), static_cast<blasint>(width), 0.0f, y + n0,
                static_cast<blasint>(w.N));
  }
  if (!w.bias.empty()) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < w.N; ++n) y[m * w.N + n] += w.bias[n];
    }
  }
}

}  // namespace qlinear::int_tiles
