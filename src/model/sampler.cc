#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace qlinear {

Status check_sampling(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0) || !std::isfinite(o.temperature)) {
    return make_error(ErrorCode::kInvalidArgument, "--temperature {}: must be >= 0", o.temperature);
  }
  if (o.top_k < 0) {
    return make_error(ErrorCode::kInvalidArgument, "--top-k {}: must be >= 0 (0: off)", o.top_k);
  }
  if (!(o.top_p > 0.0 && o.top_p <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "--top-p {}: must be in (0, 1]", o.top_p);
  }
  if (!(o.min_p >= 0.0 && o.min_p <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "--min-p {}: must be in [0, 1]", o.min_p);
  }
  if (!(o.repetition_penalty > 0.0) || !std::isfinite(o.repetition_penalty)) {
    return make_error(ErrorCode::kInvalidArgument, "--repetition-penalty {}: must be > 0",
                      o.repetition_penalty);
  }
  return Status::ok_status();
}

double sample_uniform(uint64_t seed, uint64_t step) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (step + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

int32_t greedy_token(std::span<const float> logits) {
  int32_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best_value) {  // false for NaN: it never wins
      best_value = logits[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

bool plain_greedy(const SamplingOptions& o) {
  return o.temperature == 0.0 && o.repetition_penalty == 1.0;
}

namespace {

// A float's place in descending order as an unsigned key (smaller key: larger value), -0 taken as
// +0 (they compare equal, so their order is by id).
uint32_t descending_key(float f) {
  if (f == 0.0f) f = 0.0f;
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t ascending = (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
  return ~ascending;
}

}  // namespace

// The order of a std::sort with the comparator (descending logit, ties by ascending id). For many
// candidates without NaNs (which have no place in that order) the ids are ordered by a stable
// least-significant-digit radix sort of (key, id) pairs, ids starting in ascending order: 4 passes
// over the vocabulary where the comparator sort's indirect loads took 16 ms per token for Llama
// 3's 128256 logits (dev VM), top-p sampling's cost on every backend.
std::vector<int32_t> sampling_order(std::span<const float> logits, std::size_t keep) {
  const std::size_t n = logits.size();
  const bool nan = std::any_of(logits.begin(), logits.end(), [](float l) { return std::isnan(l); });
  // A few candidates (top-k): the partial sort touches each logit about once.
  if (nan || keep * 64 <= n) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const auto by_logit = [&](int32_t a, int32_t b) {
      const float la = logits[static_cast<std::size_t>(a)];
      const float lb = logits[static_cast<std::size_t>(b)];
      return la > lb || (la == lb && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      by_logit);
    order.resize(keep);
    return order;
  }
  std::vector<uint64_t> a(n);
  std::vector<uint64_t> b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = (static_cast<uint64_t>(descending_key(logits[i])) << 32) | static_cast<uint64_t>(i);
  }
  for (int shift = 32; shift < 64; shift += 8) {
    std::size_t count[257] = {};
    for (uint64_t v : a) ++count[((v >> shift) & 0xFFu) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (uint64_t v : a) b[count[(v >> shift) & 0xFFu]++] = v;
    a.swap(b);
  }
  std::vector<int32_t> order(keep);
  for (std::size_t i = 0; i < keep; ++i) order[i] = static_cast<int32_t>(a[i] & 0xFFFFFFFFu);
  return order;
}

int32_t sample_token(std::span<float> logits, std::span<const int32_t> seen,
                     const SamplingOptions& o, uint64_t step) {
  const auto vocab = static_cast<int32_t>(logits.size());
  if (o.repetition_penalty != 1.0) {
    // transformers' RepetitionPenaltyLogitsProcessor: once per distinct token seen.
    std::vector<int32_t> distinct(seen.begin(), seen.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const auto p = static_cast<float>(o.repetition_penalty);
    for (int32_t id : distinct) {
      if (id < 0 || id >= vocab) continue;
      float& l = logits[static_cast<std::size_t>(id)];
      l = l < 0 ? l * p : l / p;
    }
  }
  if (o.temperature == 0.0 || vocab == 0) return greedy_token(logits);
  // Candidates by descending logit (ties: lower id first), so every platform orders alike.
  std::size_t keep = static_cast<std::size_t>(vocab);
  if (o.top_k > 0 && static_cast<std::size_t>(o.top_k) < keep) {
    keep = static_cast<std::size_t>(o.top_k);
  }
  const std::vector<int32_t> order = sampling_order(logits, keep);
  // Softmax of logit / temperature over the kept candidates, in double.
  std::vector<double> prob(keep);
  const double top = static_cast<double>(logits[static_cast<std::size_t>(order[0])]);
  double total = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    const double l = static_cast<double>(logits[static_cast<std::size_t>(order[i])]);
    prob[i] = std::isfinite(l) ? std::exp((l - top) / o.temperature) : 0.0;
    total += prob[i];
  }
  for (double& p : prob) p /= total;
  if (o.top_p < 1.0) {
    double cumulative = 0.0;
    std::size_t n = 0;
    while (n < keep) {
      cumulative += prob[n++];
      if (cumulative >= o.top_p) break;
    }
    keep = std::max<std::size_t>(n, 1);
  }
  if (o.min_p > 0.0) {
    const double floor = o.min_p * prob[0];
    std::size_t n = 1;
    while (n < keep && prob[n] >= floor) ++n;
    keep = n;
  }
  double mass = 0.0;
  for (std::size_t i = 0; i < keep; ++i) mass += prob[i];
  const double u = sample_uniform(o.seed, step) * mass;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    cumulative += prob[i];
    if (u < cumulative) return order[i];
  }
  return order[keep - 1];
}

}  // namespace qlinear
