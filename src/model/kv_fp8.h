// The FP8 KV cache (--kv-dtype fp8): every key and value head of a stored row becomes head_dim
// e4m3fn codes and one f32 scale, computed when the row is stored:
//   scale = max(amax / 448, 1 / (448 * 512))   amax = the head's largest |x| (NaN ignored),
//   code  = e4m3(x / scale)                     IEEE division, round to nearest even, saturating,
// and attention reads e4m3_to_f32(code) * scale (one f32 product). This is the dynamic per-token
// rule of the FP8 activations (kernels/common/activation_quant.h) applied per (position, kv head):
// no calibration and no checkpoint scales, and a head's scale never changes once its row is
// written (a per-head scale fixed from the first rows would clip later, larger ones). The cost is
// 4 bytes per head_dim codes (3% for 128-dim heads). Every backend that offers the FP8 cache
// computes exactly these codes and scales (cuda_ops_test compares them bit for bit).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "qlinear/dtype.h"

namespace qlinear::kv_fp8 {

// The same floor as the dynamic FP8 activation scales (launch.h kFp8ActScaleFloor).
inline constexpr float kScaleFloor = 1.0f / (448.0f * 512.0f);

inline float scale_of(float amax) { return std::max(amax / kF8E4M3Max, kScaleFloor); }

// One head: codes[i] of x[0, n) and its scale, returned.
inline float quantize_head(const float* x, int64_t n, uint8_t* codes) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float scale = scale_of(amax);
  for (int64_t i = 0; i < n; ++i) codes[i] = f32_to_f8e4m3(x[i] / scale);
  return scale;
}

// One head's values back: out[i] = e4m3(codes[i]) * scale, the codes decoded through a table
// of all 256 (the same floats as f8e4m3_to_f32; decoding each element made CPU attention over
// an FP8 cache 10x slower).
inline void dequantize_head(const uint8_t* codes, int64_t n, float scale, float* out) {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) {
      t[static_cast<std::size_t>(c)] = f8e4m3_to_f32(static_cast<uint8_t>(c));
    }
    return t;
  }();
  for (int64_t i = 0; i < n; ++i) out[i] = table[codes[i]] * scale;
}

}  // namespace qlinear::kv_fp8
