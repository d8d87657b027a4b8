// A random canonical int layer for kernel tests: seeded codes, scales uniform in [0.002, 0.02],
// zero points or none, a shuffled g_idx (every group keeps group_size members) or none, no bias.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "convert/canonical.h"
#include "support/gptq_pack.h"

namespace qlinear::test {

inline Canonical int_layer(int bits, int64_t K, int64_t N, int group, bool zeros, bool act_order,
                           uint32_t seed) {
  std::mt19937 rng(seed);
  IntWeights w;
  w.bits = bits;
  w.K = K;
  w.N = N;
  w.group_size = group;
  w.num_groups = K / group;
  std::uniform_int_distribution<uint32_t> code(0, (1u << bits) - 1);
  std::vector<uint32_t> codes(static_cast<size_t>(K * N));
  for (uint32_t& c : codes) c = code(rng);
  w.qweight = test::pack_gptq(codes, K, N, bits);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  for (int64_t i = 0; i < w.num_groups * N; ++i) w.scales.push_back(scale(rng));
  if (zeros) {
    for (int64_t i = 0; i < w.num_groups * N; ++i)
      w.zeros.push_back(static_cast<uint8_t>(code(rng)));
  }
  if (act_order) {
    for (int64_t k = 0; k < K; ++k) w.g_idx.push_back(static_cast<int32_t>(k / group));
    std::shuffle(w.g_idx.begin(), w.g_idx.end(), rng);
  }
  Canonical c;
  c.name = "model.layers.0.mlp.down_proj";
  c.weights = std::move(w);
  c.shard_sizes = {N};
  return c;
}

}  // namespace qlinear::test
