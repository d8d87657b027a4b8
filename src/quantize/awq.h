// AWQ's activation-aware scale search (Lin et al. 2023, as AutoAWQ's _search_best_scale runs
// it): for the linear layers that read one input, per-input-channel scales s = mean|x|^alpha
// (normalized by sqrt(max s * min s)), alpha on a grid in [0, 1); the weights are quantized as
// W * diag(s) and the activations divided by s, and the alpha whose output error on the
// calibration activations is smallest wins. alpha = 0 (s = 1, plain round-to-nearest) is on the
// grid, so the search never picks something worse than no scaling on that measure.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "quantize/int_grid.h"

namespace qlinear::quantize {

struct WeightRef {
  const std::vector<double>* w = nullptr;  // [N, K]
  int64_t N = 0;
};

struct AwqSearch {
  std::vector<double> scales;  // [K]
  double alpha = 0.0;
  double loss = 0.0;           // sum over layers of tr(dW G dW^T)
  double loss_unscaled = 0.0;  // the same at alpha = 0
};

// Output error tr(D G D^T) of a weight difference D [N, K] against the Gram matrix G [K, K].
double output_error(const std::vector<double>& d, int64_t N, int64_t K,
                    const std::vector<double>& gram);

// `gram` = X^T X / rows [K, K], `abs_mean` = mean |x| per channel [K].
AwqSearch awq_search(std::span<const WeightRef> layers, int64_t K, int64_t group_size,
                     const IntGrid& grid, const std::vector<double>& gram,
                     const std::vector<double>& abs_mean, int steps = 20);

}  // namespace qlinear::quantize
