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
// id (-0 equal to +0): the candidates' order of sample_token, the same on every platform (its
// order among NaNs is unspecified: sample_token replaces them by -inf first).
std::vector<int32_t> sampling_order(std::span<const float> logits, std::size_t keep);

// The token for `logits` (vocab floats, modified in place by the penalty). `seen`: every token
// of the sequence so far (prompt and generated), for the repetition penalty. The definition,
// which every backend's sampling follows:
//  1. repetition penalty; temperature 0: greedy_token.
//  2. NaN counts as -inf. Candidates: the first top_k (0: all) in sampling_order. If the first is
//     +inf it is the token; if it is -inf, greedy_token.
//  3. w = exp((l - l_first) / temperature) in double (0 for -inf); total = the sum of the
//     candidates' w in ascending id order; p = w / total.
//  4. top-p: the shortest leading run whose p, summed in order, reaches top_p (else all);
//     min-p: of those, the leading ones with p >= min_p * p_first.
//  5. mass = the kept p summed in ascending id order; u = sample_uniform(seed, step) * mass; the
//     token is the first kept one at which the p summed in order exceeds u (at the rounding edge,
//     the last kept one of positive p).
// Sums in id order let an implementation order only the leading candidates it reaches.
int32_t sample_token(std::span<float> logits, std::span<const int32_t> seen,
                     const SamplingOptions& options, uint64_t step);

}  // namespace qlinear
