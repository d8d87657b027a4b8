// cpu.w8a16.avx2 | scheme: 8-bit int (GPTQ, AutoRound, compressed-tensors), sym or zero
// points, act-order
// after prepare: 64-column tiles of GPTQ words, f16/bf16/f32 scales and u8 zeros per group and
// tile, s*z formed per group
// (int_tiles.h); math: int_tiles_avx2.cc (each byte converted to f32, f32 FMA); from
// kAvx2PanelMinRows rows int_panel_avx2.cc (64-row chunks dequantized once, 6 x 16 FMA kernel)
// limits: group_size % 4 == 0 and divides K; any N (ragged tile zero-padded); bits 8 only
// accuracy: f32 throughout (~1e-6 relative)
// tested on: AMD EPYC Zen4 (run as avx2), 2 cores
#include "kernels/cpu/int_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_w8a16_avx2() {
  static const int_tiles::IntTileKernel kernel("cpu.w8a16.avx2", 8, int_tiles::Isa::kAvx2);
  return kernel;
}

}  // namespace qlinear
