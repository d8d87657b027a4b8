// Random int weights and layers for kernel tests: seeded codes, scales uniform in [0.002, 0.02]
// (rounded to f16 values unless f32_scales: checkpoints mostly store f16 scales), zero points or
// none, a shuffled g_idx (every group keeps group_size members) or none, no bias. The draws come
// in that order from `rng`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "convert/canonical.h"
#include "qlinear/dtype.h"
#include "support/gptq_pack.h"

namespace qlinear::test {

inline IntWeights random_int_weights(std::mt19937& rng, int bits, int64_t K, int64_t N, int group,
                                     bool zeros, bool act_order, bool f32_scales = true) {
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
  for (int64_t i = 0; i < w.num_groups * N; ++i) {
    const float s = scale(rng);
    w.scales.push_back(f32_scales ? s : f16_to_f32(f32_to_f16(s)));
  }
  if (zeros) {
    for (int64_t i = 0; i < w.num_groups * N; ++i)
      w.zeros.push_back(static_cast<uint8_t>(code(rng)));
  }
  if (act_order) {
    for (int64_t k = 0; k < K; ++k) w.g_idx.push_back(static_cast<int32_t>(k / group));
    std::shuffle(w.g_idx.begin(), w.g_idx.end(), rng);
  }
  return w;
}

// A random canonical int layer (named like a down projection, one shard).
inline Canonical int_layer(int bits, int64_t K, int64_t N, int group, bool zeros, bool act_order,
                           uint32_t seed) {
  std::mt19937 rng(seed);
  Canonical c;
  c.name = "model.layers.0.mlp.down_proj";
  c.weights = random_int_weights(rng, bits, K, N, group, zeros, act_order);
  c.shard_sizes = {N};
  return c;
}

}  // namespace qlinear::test
