// cpu.w4a16.amx | scheme: 4-bit int (AWQ, GPTQ, AutoRound, compressed-tensors), sym or zero
// points, act-order; prefill and batches (M >= kAmxMinRows = 16; decode stays on cpu.w4a16.avx512)
// after prepare: cpu.w4a16.avx512's layout (64-column tiles of GPTQ words, f16/bf16/f32 scales and
// u8 zeros per group and tile, s*(z+128) formed per group; int_tiles.h)
// math: int_panel_amx.cc: each 128-row chunk of a tile decoded once to exact bf16 pairs 128 +
// nibble (the panel engine's decode), blocks of 16 activation rows multiplied by it on AMX tiles
// (TDPBF16PS into f32 per group segment), the avx512 panel epilogue applying scales and zero terms
// limits: group_size % 32 == 0 and divides K (a tile step is 32 rows of K); needs AMX-BF16 and the
// OS's permission (detect_cpu_features asks for it), and AVX-512 BF16 for the rows and epilogue
// accuracy: weights exact; bf16 activations exact, f32 accumulation; f32 activations split into
// bf16 hi + lo as the avx512 kernel (~1e-6 relative); f16 rounded to bf16 (~1e-3, tolerance 1e-2)
// tested on: Intel Xeon with amx_bf16 (the GPU machine host, 16 cores), xeon-amx-2026-12-06
#include "kernels/cpu/int_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_w4a16_amx() {
  static const int_tiles::IntTileKernel kernel("cpu.w4a16.amx", 4, int_tiles::Isa::kAmx);
  return kernel;
}

}  // namespace qlinear
