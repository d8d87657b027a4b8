// cpu.w4a16.avx512 | scheme: 4-bit int (AWQ, GPTQ, AutoRound), sym or zero points, act-order
// after prepare: 64-column tiles of GPTQ words, f16/bf16/f32 scales and u8 zeros per group and
// tile, s*(z+128) formed per group
// (int_tiles.h); math: int_tiles_avx512.cc (vdpbf16ps on codes decoded exactly to bf16 inline,
// per block of 5 rows); from kPanelMinRows4 activation rows the panel engine int_panel_avx512.cc
// (decoded once per 128-row chunk; measured equal below that, see docs/design.md)
// limits: group_size % 8 == 0 and divides K; any N (ragged tile zero-padded); bits 4 only
// accuracy: weights exact; bf16 activations exact; f32 activations split into bf16 hi + lo
// (16 significand bits, ~1e-6 relative, passes the 1e-5 f32 grid tolerance); f16 exact as hi + lo
// for M <= 4, rounded to bf16 above (~1e-3 relative, tolerance 1e-2)
// tested on: AMD EPYC Zen4 (avx512_bf16), 2 cores
#include "kernels/cpu/int_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_w4a16_avx512() {
  static const int_tiles::IntTileKernel kernel("cpu.w4a16.avx512", 4, int_tiles::Isa::kAvx512);
  return kernel;
}

}  // namespace qlinear
