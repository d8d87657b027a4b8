// GPTQ (Frantar et al. 2022, as AutoGPTQ's GPTQ.fasterquant runs it): columns quantized one at a
// time, each one's error fed back into the columns not yet quantized through the inverse Hessian
// of the layer's input, H = 2/n X^T X. Damping 0.01 * mean(diag H), the upper Cholesky factor of
// H^-1, lazy block updates of `block` columns; with act-order the columns go in order of
// decreasing diag(H) and g_idx records each input channel's group.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "quantize/int_grid.h"

namespace qlinear::quantize {

struct GptqOptions {
  IntGrid grid;
  int64_t group_size = 128;  // K for channelwise
  bool act_order = false;
  double damp = 0.01;
  int64_t block = 128;
  // Group parameters by the clipping search on the (updated) weights, else min-max as AutoGPTQ.
  bool clip_search = true;
};

// `w` [N, K] row-major, `hessian` [K, K] (2/n X^T X, symmetric). Errors: H not positive definite
// after damping (named with `layer`).
Result<IntLayer> gptq_quantize(const std::vector<double>& w, int64_t N, int64_t K,
                               std::vector<double> hessian, const GptqOptions& options,
                               const std::string& layer);

// Lower Cholesky factor of the symmetric [n, n] matrix `a` in place (upper triangle zeroed);
// false when it is not positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t n);

}  // namespace qlinear::quantize
