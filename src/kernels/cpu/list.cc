// The CPU kernels, in priority order: selection takes the first one whose check() accepts.
// Order: native kernels before the OpenBLAS ("blas") path; within a family the most specialised
// ISA first. The numbers that justify each position come from bench/results/ (qlinear bench on
// the shapes of bench/shapes.txt) and are quoted here as they land.
// The int8-activation kernels come first but accept only problems whose activations the user
// asked to be int8 (--int8-activations); every other int kernel but blas and reference rejects
// those, so the order never turns the mode on.
// bench/results/cpu.md (2026-11-29): cpu.fp8.*.avx512 >= 1.85x OpenBLAS sgemm at every shape
// and M, M = 1 at 0.74-1.0x the measured read bandwidth on the Llama shapes; cpu.w4a16.avx512
// and cpu.w8a16.avx512 >= 1.7x sgemm everywhere, M = 1 at ~0.75-0.8x the bandwidth; the AVX2
// int kernels beat the blas family up to M = 16 and use its method above.
// cpu.int.i16.avx2 (int16 activations, vpmaddwd) takes M <= 15 from the AVX2 int kernels: one
// Zen 3 core, weights in L3, M = 1..15: 1.3-1.5x cpu.w4a16.avx2 and 1.1-1.8x cpu.w8a16.avx2
// (docs/design.md); it comes after the AVX-512 kernels, which keep their machines.
// cpu.int.a8.avx2 (int8 activations, vpmaddubsw) runs the --int8-activations mode on AVX2-only
// CPUs for M <= 128, after the VNNI kernels (which keep their machines at every M) and before
// the OpenBLAS quantize-dequantize path, which it beat at every M up to 128 and which keeps
// M > 128 (bench/results/devvm-avx2-a8-2026-12-02).
#include <vector>

#include "kernels/registry.h"

// One line per kernel: X(<id>) names `const LinearKernel& kernel_<id>()` of its kernel file.
#define QLINEAR_CPU_KERNELS(X) \
  X(cpu_w4a8_avx512vnni)       \
  X(cpu_w8a8_avx512vnni)       \
  X(cpu_int_a8_avx2)           \
  X(cpu_w4a16_amx)             \
  X(cpu_w8a16_amx)             \
  X(cpu_w4a16_avx512)          \
  X(cpu_w8a16_avx512)          \
  X(cpu_int_i16_avx2)          \
  X(cpu_w4a16_avx2)            \
  X(cpu_w8a16_avx2)            \
  X(cpu_fp8_w8a8_avx512)       \
  X(cpu_fp8_w8a16_avx512)      \
  X(cpu_fp8_w8a16_avx2)        \
  X(cpu_blas_int)              \
  X(cpu_int_generic)           \
  X(cpu_blas_fp8)              \
  X(cpu_dense_avx512)          \
  X(cpu_dense_avx2)            \
  X(cpu_blas_dense)

namespace qlinear {

#define QLINEAR_DECLARE_KERNEL(id) const LinearKernel& kernel_##id();
#define QLINEAR_KERNEL_ADDRESS(id) &kernel_##id(),
QLINEAR_CPU_KERNELS(QLINEAR_DECLARE_KERNEL)

std::vector<const LinearKernel*> cpu_kernels() {
  return {QLINEAR_CPU_KERNELS(QLINEAR_KERNEL_ADDRESS)};
}

}  // namespace qlinear
