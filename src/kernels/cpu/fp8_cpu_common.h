// Pieces the native CPU FP8 kernels share: their check() list, the prepared weight panels, the
// activation buffers and the thread count. Not a kernel; the kernels are fp8_w8a16_avx512.cc,
// fp8_w8a16_avx2.cc and fp8_w8a8_avx512.cc.
//
// Decode rule all of them use: an e4m3fn byte b becomes the f16 bit pattern
//   ((int8)b << 7) & 0xBF80   (sign to bit 15, the 7-bit magnitude to bits 7..13)
// whose value is exactly 2^-8 times the e4m3fn value, subnormals included (both formats have a
// subnormal range that the shift maps onto each other). vcvtph2ps then gives an exact float.
// The 2^8 is folded into the prepared weight scales (kDecodeFactor). This shift decode turns the
// NaN codes 0x7F/0xFF into +-480; the AVX2 decoder patches them back to NaN, the avx512 vbmi
// table decode keeps them NaN, and converted checkpoints never hold them (convert_fp8 rejects
// NaN codes at load).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/memory.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/kernel.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"
#include "qlinear/device.h"
#include "qlinear/view.h"

namespace qlinear::fp8_cpu {

inline constexpr float kDecodeFactor = 256.0f;  // e4m3fn value = decoded f16 value * 2^8
inline constexpr int kPanelN = 16;              // output rows per weight panel (one zmm of f32)
inline constexpr int kPanelGroup = 4;       // panels the AVX-512 engine computes together (64 rows)
inline constexpr int64_t kMaxChunkK = 256;  // K columns decoded per panel chunk

// What a kernel needs from the CPU, checked in this order.
struct IsaNeeds {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512_bf16 = false;
};

// The shared check() list: platform, compiled ISA, scheme, FP8 mode, granularity (block_k a
// multiple of 32; any block_n), activation quantization (W8A8 only), dtypes, ISA.
Verdict check_fp8(const LinearProblem& problem, const Device& device, Fp8Mode mode,
                  const IsaNeeds& needs);

// Weights after prepare: panels of kPanelN rows, K padded to a multiple of chunk_k.
// Inside each K chunk of a panel (a panel's chunks follow each other):
//   kPairs layout (avx512 bf16 dot products): [chunk_k/2][16 rows][2 k] bytes, so one 32-byte
//     run decodes to the 32 bf16 of one vdpbf16ps operand (k pair p for 16 rows).
//   kPairsVbmi: kPairs with each two k pairs (64 bytes) interleaved in 8-byte runs
//     (p0[0..7] p1[0..7] p0[8..15] p1[8..15] ...), so two byte-table lookups (vpermi2b) and one
//     byte unpack yield both pairs' bf16 operands in order.
//   kRows layout (avx2 f32 FMA): [chunk_k][16 rows] bytes, one k for 16 rows per 16 bytes.
enum class PanelLayout { kPairs, kPairsVbmi, kRows };

struct Fp8Panels {
  int64_t N = 0;
  int64_t K = 0;
  int64_t Np = 0;       // N rounded up to kPanelN * kPanelGroup
  int64_t Kp = 0;       // K rounded up to chunk_k
  int64_t chunk_k = 0;  // divides the weight block_k and the activation group (W8A8), <= 256
  int64_t seg_k = 0;    // K columns sharing one weight scale: block_k, or Kp for per-row scales
  int64_t segs = 0;     // weight scale columns: ceil(K / block_k), or 1
  PanelLayout layout = PanelLayout::kPairs;
  // Np*Kp bytes in `layout`; padding is code 0 (+0.0)
  StreamedVector<uint8_t> codes;  // huge pages (core/memory.h)
  // [Np/16][segs][16]: the scale of each panel row and K segment, times kDecodeFactor (0 for
  // padding rows).
  std::vector<float> scales;
  std::vector<float> bias;  // [Np], zero when the layer has none

  int64_t panels() const { return Np / kPanelN; }
  int64_t chunks() const { return (K + chunk_k - 1) / chunk_k; }
  // One panel's K chunk (chunk_k * 16 bytes); each panel's chunks are contiguous.
  const uint8_t* chunk_codes(int64_t panel, int64_t chunk) const {
    return codes.data() + panel * kPanelN * Kp + chunk * chunk_k * kPanelN;
  }
  const float* panel_scales(int64_t panel, int64_t chunk) const {
    return scales.data() + (panel * segs + chunk * chunk_k / seg_k) * kPanelN;
  }
};

// chunk_k for a problem: gcd of 256, the weight block_k and (W8A8 per-group) the activation
// group width.
int64_t chunk_k_for(const LinearProblem& problem, Fp8Mode mode);

Result<Fp8Panels> make_panels(const Fp8Weights& w, int64_t chunk_k, PanelLayout layout,
                              int threads);

// Threads for prepare: 1 inside an OpenMP parallel region, else all.
int prepare_threads();

// x [M, K] (f32/bf16/f16) as bf16 rows of Kp elements, zero padded. `lo`, when not null, gets the
// bf16 remainder x - hi, so hi + lo carries 16 significant bits (every f16 and bf16 exactly).
// row_slots: K floats of scratch for each of max_threads() threads.
void activations_to_bf16(ConstMatrixView x, int64_t Kp, uint16_t* hi, uint16_t* lo, int threads,
                         float* row_slots);
// x [M, K] as f32 rows of Kp elements, zero padded.
void activations_to_f32(ConstMatrixView x, int64_t Kp, float* out, int threads);

// Writes yt [M, 16] (the panel's accumulated rows) + the panel's bias into y's columns
// [panel * 16, panel * 16 + 16) (fewer for the last, ragged panel), in y's dtype.
void store_panel_rows(const Fp8Panels& w, const float* yt, int64_t yt_ld, int64_t first_panel,
                      int64_t panels, MatrixView y);

}  // namespace qlinear::fp8_cpu
