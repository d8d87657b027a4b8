// cpu.int.generic | scheme: 4- or 8-bit int, sym or zero points, act-order; portable C++
// after prepare: the 64-column tiles of int_tiles.h; math: tile_job_generic in int_tiles.cc
// (one row at a time, 64 columns the compiler vectorises, f32 accumulation per group)
// limits: group_size a multiple of the rows per packed word and dividing K; any N; no 2-bit
// accuracy: f32 throughout (~1e-6 relative)
// tested on: AMD EPYC Zen4 (any CPU: the fallback on non-x86)
#include "kernels/cpu/int_tiles.h"

namespace qlinear {

const LinearKernel& kernel_cpu_int_generic() {
  static const int_tiles::IntTileKernel kernel("cpu.int.generic", 0, int_tiles::Isa::kGeneric);
  return kernel;
}

}  // namespace qlinear
