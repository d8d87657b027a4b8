// Integer grid quantization of weight groups: the scale / zero of a group by min-max, or by a
// search over clipping ratios that minimizes the (importance-weighted) reconstruction error
// (AWQ's auto-clip idea, on weights). Codes are always computed against the scale as it will be
// stored (rounded to f16 / bf16), so the file dequantizes to exactly what was measured.
#pragma once

#include <cstdint>
#include <vector>

#include "qlinear/dtype.h"

namespace qlinear::quantize {

struct IntGrid {
  int bits = 4;
  bool sym = true;  // w = (q - 2^(b-1)) * s; else w = (q - z) * s
  DType scale_dtype = DType::kF16;
  // GPTQ v1 files store z - 1, so an asymmetric zero point of 0 cannot be written (formats.md
  // §1.2): zero points are kept in [1, 2^b - 1].
  bool min_zero_one = false;
  uint32_t maxq() const { return (1u << bits) - 1; }
};

struct GroupParams {
  double scale = 1.0;
  uint32_t zero = 0;
};

// `scale` as the file stores it (0 and subnormal underflow become the smallest positive value).
double stored_scale(double scale, DType dtype);

// Min-max parameters of n values at stride `stride`, with the range shrunk by `ratio`:
// symmetric s = 2 * ratio * max|w| / maxq, zero 2^(b-1) (GPTQ's convention); asymmetric over
// [min(w, 0), max(w, 0)] * ratio.
GroupParams minmax_params(const double* w, int64_t n, int64_t stride, const IntGrid& grid,
                          double ratio = 1.0);

uint32_t quantize_code(double w, const GroupParams& p, uint32_t maxq);
inline double dequantize_code(uint32_t q, const GroupParams& p) {
  return (static_cast<double>(q) - static_cast<double>(p.zero)) * p.scale;
}

// Sum of importance[i] * (w - dq(q(w)))^2 (importance null: all 1).
double group_error(const double* w, const double* importance, int64_t n, int64_t stride,
                   const GroupParams& p, uint32_t maxq);

// The clipping search: ratios 1, 1 - 1/steps * max_shrink, ..., 1 - max_shrink; the ratio 1
// (min-max) is always a candidate, so the result never has a larger error than min-max.
GroupParams search_params(const double* w, const double* importance, int64_t n, int64_t stride,
                          const IntGrid& grid, int steps = 20, double max_shrink = 0.5);

// A whole layer quantized group by group along K (round to nearest on the searched grid).
struct IntLayer {
  int64_t N = 0;
  int64_t K = 0;
  int64_t group_size = 0;       // K for channelwise
  std::vector<uint32_t> codes;  // [K, N]
  std::vector<uint32_t> zeros;  // [G, N] true zero points
  std::vector<double> scales;   // [G, N] as stored
  std::vector<int32_t> g_idx;   // [K]
  std::vector<double> dequant;  // [N, K]
};

// `w` [N, K]; importance [K] or empty (weights the clipping search: diag of X^T X when
// calibration is given); `clip_search` false is plain min-max.
IntLayer rtn_quantize(const std::vector<double>& w, int64_t N, int64_t K, int64_t group_size,
                      const IntGrid& grid, const std::vector<double>& importance, bool clip_search);

}  // namespace qlinear::quantize
