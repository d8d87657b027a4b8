// The weight layout shared by the native dense CPU kernels (cpu.dense.avx2, cpu.dense.avx512):
// bf16 or f16 weights kept at 16 bits, repacked once at prepare. Not a kernel.
//
// Layout after prepare: N is cut into panels of kPanelN = 16 output columns (the last one
// zero-padded), K into pairs (k = 2j, 2j + 1; an odd K gets one zero column). A panel is one
// contiguous stream of Kp / 2 pair blocks of 64 bytes, so one pass over a panel reads its
// weights once, front to back:
//   bf16: block j = 16 u32 words, word c = W[n0 + c][2j] | W[n0 + c][2j + 1] << 16. That is the
//         operand of vdpbf16ps as it is (16 lanes of one k pair), and on AVX2 one shift gives the
//         f32 of k = 2j and one and-mask the f32 of k = 2j + 1 for 8 columns: no shuffles.
//   f16:  block j = W[n0 .. n0 + 15][2j] then W[n0 .. n0 + 15][2j + 1] (16 halves each), so
//         vcvtph2ps widens 8 (AVX2) or 16 (AVX-512) columns of one k straight from memory.
// Both are 64 bytes per k pair and panel: the engines step through panels the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"
#include "qlinear/device.h"
#include "qlinear/view.h"

namespace qlinear::dense_cpu {

inline constexpr int64_t kPanelN = 16;
inline constexpr int64_t kPairHalves = 2 * kPanelN;  // u16 per pair block (64 bytes)

struct DensePanels {
  DType dtype = DType::kBF16;  // kBF16 or kF16
  int64_t K = 0;
  int64_t N = 0;
  int64_t Kp = 0;           // K rounded up to even
  int64_t panels = 0;       // ceil(N / 16), rounded up to the kernel's panel group
  Tensor data;              // u16 [panels, Kp / 2, 32] (huge pages: core/memory.h)
  std::vector<float> bias;  // [N] or empty

  int64_t pairs() const { return Kp / 2; }
  // Panel p's stream: pairs() blocks of kPairHalves halves.
  const uint16_t* panel(int64_t p) const {
    return static_cast<const uint16_t*>(data.data()) + p * Kp * kPanelN;
  }
  // Columns of panel p that exist (16, fewer for the last one, 0 for padding panels).
  int64_t width(int64_t p) const { return std::clamp<int64_t>(N - p * kPanelN, 0, kPanelN); }
};

// Repacks bf16 or f16 dense weights (already checked by dense_weights_of) into panels, their
// count rounded up to a multiple of `panel_multiple` with zero panels (an engine that computes
// panels in fixed groups never reads past the layout), on all cores unless called inside a
// parallel region. Errors name `kernel` and the layer.
Result<DensePanels> make_dense_panels(const DenseWeights& w, int64_t panel_multiple,
                                      std::string_view kernel, const Canonical& weights);

// What both native dense kernels require besides their ISA: CPU platform, x86-64 build, dense
// scheme, bf16 or f16 weights (f32 weights go to cpu.dense.blas.sgemm: nothing to halve),
// f32/bf16/f16 activations and outputs.
Verdict check_dense_native(const LinearProblem& problem, const Device& device);

// Writes rows [0, rows) of yt (ld yt_ld floats; columns [0, count)) + bias into y at rows
// [first_row, first_row + rows) and columns [n0, n0 + count), in y's dtype.
void store_tile(const float* yt, int64_t yt_ld, int64_t rows, int64_t first_row, int64_t n0,
                int64_t count, const std::vector<float>& bias, MatrixView y);

}  // namespace qlinear::dense_cpu
