// cpu.w8a16.avx512 | scheme: 8-bit int (GPTQ, AutoRound, compressed-tensors), sym or zero
// points, act-order
// after prepare: 64-column tiles of GPTQ words, f16/bf16/f32 scales and u8 zeros per group and
// tile, s*(z+2176) formed per group
// (int_tiles.h); math: below kPanelMinRows8 activation rows int_tiles_avx512.cc (a code is two
// nibbles lo + 16*hi, each decoded exactly to bf16 and multiplied by vdpbf16ps); from there the
// panel engine int_panel_avx512.cc (each 128-row chunk of a tile decoded once to exact bf16 codes,
// one product per code, shared by all rows of the job)
// limits: group_size % 4 == 0 and divides K; any N (ragged tile zero-padded); bits 8 only
// accuracy: weights exact; bf16 activations exact; f32 activations split into bf16 hi + lo
// (16 significand bits, ~1e-6 relative, passes the 1e-5 f32 grid tolerance); f16 exact as hi + lo
// for M <= 4, rounded to bf16 above (~1e-3 relative, tolerance 1e-2)
// tested on: AMD EPYC Zen4 (avx512_bf16), 2 cores
#include "kernels/cpu/int_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_w8a16_avx512() {
  static const int_tiles::IntTileKernel kernel("cpu.w8a16.avx512", 8, int_tiles::Isa::kAvx512);
  return kernel;
}

}  // namespace qlinear
