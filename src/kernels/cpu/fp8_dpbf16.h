// The AVX-512 BF16 engine of the native FP8 kernels (cpu.fp8.w8a16.avx512, cpu.fp8.w8a8.avx512).
// e4m3fn weights decode exactly to bf16 (<= 4 significant bits), so vdpbf16ps multiplies them
// exactly with bf16 activations and accumulates in f32.
//
// Per group of 4 weight panels (64 output rows) and K chunk (<= 256 columns): for M <= 4 the
// codes are decoded in registers; otherwise the chunk is decoded once into an L1/L2 buffer of
// bf16 pairs and reused by every block of up to 6 activation rows (each broadcast activation pair
// feeds 4 dot products). Chunk partial sums are scaled by weight scale x activation scale and
// accumulated in f32, so block weights and per-group activations get one scale per chunk.
#pragma once

#include <cstdint>

#include "kernels/cpu/fp8_cpu_common.h"

namespace qlinear::fp8_cpu {

struct Bf16Activations {
  int64_t M = 0;
  int64_t stride = 0;            // elements between rows (the panels' Kp)
  const uint16_t* hi = nullptr;  // [M, stride] bf16
  const uint16_t* lo = nullptr;  // optional second term: x ~ hi + lo
  // Optional [M, chunks] activation scale of each row and K chunk (W8A8); null means 1.
  const float* chunk_scales = nullptr;
};

// The panel layout run_dpbf16 wants on this CPU: kPairsVbmi where avx512_vbmi is present (Zen 4,
// Ice Lake and later: a table decode of 64 codes in 5 instructions), else kPairs (shift into f16
// and convert: Cooper Lake has avx512_bf16 without vbmi).
PanelLayout dpbf16_layout();

// Floats of per-thread accumulator a call of M rows needs: dpbf16_slot_floats(M) for each of
// max_threads() threads.
inline int64_t dpbf16_slot_floats(int64_t M) { return M * kPanelGroup * kPanelN; }

// y [M, N] (y's dtype) = sum over chunks of scale * (x . w) + bias. Needs avx512f, avx512bw,
// avx512_bf16 (the caller's check() asked for them), and avx512_vbmi for kPairsVbmi panels.
void run_dpbf16(const Fp8Panels& w, const Bf16Activations& x, MatrixView y, int threads,
                float* yt_slots);

}  // namespace qlinear::fp8_cpu
