// Choosing the next token from a row of logits: greedy, or sampling with repetition penalty,
// temperature, top-k, top-p and min-p applied in that order (transformers' logits processors and
// warpers), from a counter-based generator (the draw of step s depends only on the seed and s, so
// every backend reproduces the same choices).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace qlinear {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy
  int top_k = 0;             // 0: off
  double top_p = 1.0;        // 1: off
  double min_p = 0.0;        // 0: off
  double repetition_penalty = 1.0;
  uint64_t seed = 0;
};

// Range checks with the option names in the messages.
Status check_sampling(const SamplingOptions& options);

// The uniform in [0, 1) of draw `step` for `seed` (splitmix64).
double sample_uniform(uint64_t seed, uint64_t step);

// Greedy decoding's token: the first index of the largest logit; NaN never wins, and a row
// without any value above -inf gives 0 (every backend's argmax op follows this: model/ops.h).
int32_t greedy_token(std::span<const float> logits);

// Whether `options` pick greedy_token of the raw logits (no penalty or warper reads them), so a
// decoder may take the argmax on the device and return ids only (Decoder::forward_greedy).
bool plain_greedy(const SamplingOptions& options);

// The ids of the `keep` (<= logits.size()) largest logits, by descending logit, ties by ascending
// id (-0 equal to +0): the candidates' order of sample_token, the same on every platform.
std::vector<int32_t> sampling_order(std::span<const float> logits, std::size_t keep);

// The token for `logits` (vocab floats, modified in place by the penalty and the warpers).
// `seen`: every token of the sequence so far (prompt and generated), for the repetition penalty.
int32_t sample_token(std::span<float> logits, std::span<const int32_t> seen,
                     const SamplingOptions& options, uint64_t step);

}  // namespace qlinear
