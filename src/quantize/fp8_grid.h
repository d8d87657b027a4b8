// FP8 (e4m3fn) weight quantization: absmax scales per tensor, per output channel or per
// 128 x 128 block (s = max|w| / 448, rounded to the stored scale dtype first so the codes match
// the file), codes = saturating e4m3fn(w / s).
#pragma once

#include <cstdint>
#include <vector>

#include "qlinear/dtype.h"
#include "quant/quant_spec.h"

namespace qlinear::quantize {

struct Fp8Layer {
  std::vector<uint8_t> codes;   // [N, K]
  std::vector<double> scales;   // 1, [N] or [ceil(N/bn), ceil(K/bk)]
  std::vector<double> dequant;  // [N, K]
};

Fp8Layer fp8_quantize(const std::vector<double>& w, int64_t N, int64_t K,
                      Fp8WeightGranularity granularity, int64_t block_n, int64_t block_k,
                      DType scale_dtype);

// An FP8 scale for a tensor whose largest magnitude is `amax` (1 for all zeros).
double fp8_scale(double amax, DType scale_dtype);

}  // namespace qlinear::quantize
