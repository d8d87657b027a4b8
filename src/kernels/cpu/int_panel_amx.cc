// The AMX engine of cpu.w4a16.amx and cpu.w8a16.amx (layout: int_tiles.h; rows: the avx512 panel
// engine's, build_rows_avx512). Per job (one 64-column tile, a chunk of activation rows) and per
// K chunk of kPanelChunkRows rows, the tile's codes are decoded once into the panel engine's exact
// bf16 pairs [pairs][64 columns] (decode_panel). That panel is already the B
// operand of TDPBF16PS: a tile row is 16 consecutive pairs of 16 columns (64 bytes, stride 256),
// and the rows' chunk-major pairs are its A operand (16 pairs of one activation row per tile
// row). Per block of up to 16 rows and group segment (whole steps of 16 pairs = 32 rows of K):
// four C tiles (16 rows x 16 columns f32) start at zero, take one TDPBF16PS per step each, and
// are stored and applied by the panel engine's epilogue: y += s * acc, and once per group
// y -= sz * sum(x over the group). The products are exact (bf16 x bf16) and sum in f32.
//
// Linux lends AMX's tile data state only to a process that asked for it
// (arch_prctl(ARCH_REQ_XCOMP_PERM)): detect_cpu_features() asks once and reports amx only when it
// was granted. Each job loads its tile configuration and releases the tiles at its end, so an
// OpenMP worker holds no tile state between calls.
#include <cstdint>

#include "kernels/cpu/group_params_avx512.h"
#include "kernels/cpu/int_tiles.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define QLINEAR_AMX                                                        \
  __attribute__((                                                          \
      target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,amx-tile," \
             "amx-bf16")))

namespace qlinear::int_tiles {
namespace {

constexpr int64_t kChunkPairs = kPanelChunkRows / 2;
constexpr int64_t kStepPairs = 16;  // pairs per tile step (a tile row: 16 x 4 bytes)
constexpr int kTileRows = 16;
constexpr int kRowBytes = 64;
constexpr int kPanelStride = kTileN * 4;      // bytes between a panel's pairs
constexpr int kRowsStride = kChunkPairs * 4;  // bytes between activation rows of a chunk

// The palette-1 configuration: tiles 0-3 the accumulators (rows x 16 f32), 4 the activations
// (rows x 16 pairs), 5 and 6 the weights (16 pairs x 16 columns).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

QLINEAR_AMX void configure(int rows) {
  TileConfig c;
  for (int t = 0; t < 5; ++t) {
    c.rows[t] = static_cast<uint8_t>(rows);
    c.colsb[t] = kRowBytes;
  }
  for (int t = 5; t < 7; ++t) {
    c.rows[t] = kTileRows;
    c.colsb[t] = kRowBytes;
  }
  _tile_loadconfig(&c);
}

}  // namespace

QLINEAR_AMX void tile_job_panel_amx(const TiledWeights& w, const Rows& rows, int64_t tile,
                                    int64_t r0, int64_t r1, float* ytile) {
  alignas(64) uint32_t panel[kChunkPairs * kTileN];
  alignas(64) float acc[4][kTileRows * 16];
  const uint32_t* q = w.tile_q(tile);
  const bool eight = w.bits == 8;
  const int64_t group_pairs = w.K / w.groups / 2;
  const TileParams params(w, tile);
  const int64_t rpo = rows.rows_per_out;
  const int64_t o0 = r0 / rpo;
  int configured = 0;
  for (int64_t k0 = 0; k0 < w.K; k0 += kPanelChunkRows) {
    const int64_t k1 = std::min(w.K, k0 + kPanelChunkRows);
    decode_panel(q, w.bits, k0, k1, panel);
    const int64_t p0 = k0 / 2;
    const int64_t p1 = k1 / 2;
    for (int64_t r = r0; r < r1; r += kTileRows) {
      const int n = static_cast<int>(std::min<int64_t>(kTileRows, r1 - r));
      if (n != configured) {
        configure(n);
        configured = n;
      }
      // Row r's pairs of this chunk (chunk-major rows: build_rows_avx512).
      const uint32_t* xr = rows.pairs + p0 * rows.count + r * kChunkPairs;
      for (int64_t p = p0; p < p1;) {
        const int64_t g = p / group_pairs;
        const int64_t end = std::min(p1, (g + 1) * group_pairs);
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t s = p; s < end; s += kStepPairs) {
          const uint32_t* wp = panel + (s - p0) * kTileN;
          _tile_loadd(4, xr + (s - p0), kRowsStride);
          _tile_loadd(5, wp, kPanelStride);
          _tile_loadd(6, wp + 16, kPanelStride);
          _tile_dpbf16ps(0, 4, 5);
          _tile_dpbf16ps(1, 4, 6);
          _tile_loadd(5, wp + 32, kPanelStride);
          _tile_loadd(6, wp + 48, kPanelStride);
          _tile_dpbf16ps(2, 4, 5);
          _tile_dpbf16ps(3, 4, 6);
        }
        _tile_stored(0, acc[0], kRowBytes);
        _tile_stored(1, acc[1], kRowBytes);
        _tile_stored(2, acc[2], kRowBytes);
        _tile_stored(3, acc[3], kRowBytes);
        GroupParams gp;
        load_group_params(params, g, gp);
        const bool first = p == g * group_pairs;
        for (int j = 0; j < 4; ++j) {
          const __m512 sc = _mm512_load_ps(gp.s + 16 * j);
          __m512 sz = _mm512_load_ps(gp.sz + 16 * j);
          // 8-bit codes are decoded as themselves (offset 0), the zero terms hold the avx512
          // inline kernel's offset: as the panel engine, take it out here.
          if (eight) sz = _mm512_fnmadd_ps(_mm512_set1_ps(kAvx512Offset8), sc, sz);
          for (int i = 0; i < n; ++i) {
            float* y = ytile + ((r + i) / rpo - o0) * kTileN + 16 * j;
            __m512 out = _mm512_fmadd_ps(_mm512_load_ps(acc[j] + 16 * i), sc, _mm512_loadu_ps(y));
            if (first) {
              const float sum = rows.sums[(r + i) * w.groups + g];
              out = _mm512_fnmadd_ps(sz, _mm512_set1_ps(sum), out);
            }
            _mm512_storeu_ps(y, out);
          }
        }
        p = end;
      }
    }
  }
  if (configured != 0) _tile_release();
}

}  // namespace qlinear::int_tiles

#endif  // __x86_64__
