// cpu.w4a8.avx512vnni | scheme: 4-bit int weights (AWQ, GPTQ, AutoRound), sym or zero points,
//   act-order, with int8 activations -- only when asked for with --int8-activations
// after prepare: the 64-column tiles of int_tiles.h (scales at checkpoint precision, u8 zeros;
// s*z formed per group, no offset)
// math: int_a8_avx512.cc (vpdpbusd, u8 codes x s8 activations, int32 per group)
// limits: group_size % 8 == 0, divides K, <= 1127288 (int32 accumulators); any N
// accuracy: weights exact; activations per activation_quant.h (int8 per row and weight group);
//   bit-exact codes against reference.int.scalar in the same mode, f32 accumulation after
// tested on: AMD EPYC Zen4 (avx512_vnni), 2 cores
#include "kernels/cpu/int_a8_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_w4a8_avx512vnni() {
  static const int_a8::IntA8Kernel kernel("cpu.w4a8.avx512vnni", 4);
  return kernel;
}

}  // namespace qlinear
