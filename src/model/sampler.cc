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

namespace {

// Whether (la, a) comes first in the sampling order: the larger logit, then the lower id (-0 and
// +0 compare equal). Neither logit is NaN (sample_token makes them -inf first).
bool precedes(float la, int32_t a, float lb, int32_t b) { return la > lb || (la == lb && a < b); }

// A sampled step's buffers, kept per thread: fresh vocabulary-sized vectors each token cost more
// in page faults than the arithmetic.
struct SampleScratch {
  std::vector<double> weight;  // [vocab] the candidates' w by id
  std::vector<float> clean;    // the logits with NaN as -inf, where there is a NaN
};

SampleScratch& sample_scratch() {
  thread_local SampleScratch scratch;
  return scratch;
}

}  // namespace

// Read literally, the definition (sampler.h) orders every candidate: a sort of the whole
// vocabulary per token. Its sums being in id order, only the leading candidates that top-p, min-p
// and the draw reach need an order: the first m by sampling_order (a partial sort), m growing
// 16-fold until they suffice (Llama 3's 128256 logits: 1.4-2.6 ms per token against 6-9 with the
// whole row sorted, dev VM).
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
  const auto n = static_cast<std::size_t>(vocab);
  SampleScratch& scratch = sample_scratch();
  std::span<const float> l = logits;
  if (std::any_of(logits.begin(), logits.end(), [](float v) { return std::isnan(v); })) {
    scratch.clean.assign(logits.begin(), logits.end());
    for (float& v : scratch.clean) {
      if (std::isnan(v)) v = -std::numeric_limits<float>::infinity();
    }
    l = scratch.clean;
  }
  const std::size_t candidates =
      o.top_k > 0 && static_cast<std::size_t>(o.top_k) < n ? static_cast<std::size_t>(o.top_k) : n;
  const bool top_k = candidates < n;
  // The first m candidates in order: all of them under top-k, else the leading 64 for a start,
  // more as the warpers or the draw reach further (16-fold, one partial sort each).
  std::size_t m = top_k ? candidates : std::min<std::size_t>(n, 64);
  std::vector<int32_t> order = sampling_order(l, m);
  const auto ordered = [&](std::size_t need) {
    if (m >= need) return;
    while (m < need) m = std::min(candidates, m * 16);
    order = sampling_order(l, m);
  };
  const float first = l[static_cast<std::size_t>(order[0])];
  if (first == std::numeric_limits<float>::infinity()) return order[0];  // the softmax's limit
  if (first == -std::numeric_limits<float>::infinity()) return greedy_token(logits);
  const double first_d = static_cast<double>(first);
  const auto weight_of = [&](int32_t id) {
    const double v = static_cast<double>(l[static_cast<std::size_t>(id)]);
    return std::isfinite(v) ? std::exp((v - first_d) / o.temperature) : 0.0;
  };
  // Weights by id (only the candidates' entries are written and read). Under top-k the
  // candidates' ids in ascending order are by_id; otherwise they are every id.
  std::vector<double>& w = scratch.weight;
  w.resize(n);
  std::vector<int32_t> by_id;
  const auto for_each_candidate = [&](auto&& fn) {
    if (top_k) {
      for (int32_t id : by_id) fn(id);
    } else {
      for (std::size_t i = 0; i < n; ++i) fn(static_cast<int32_t>(i));
    }
  };
  double total = 0.0;
  if (top_k) {
    by_id = order;
    if (candidates * 16 < n) {
      std::sort(by_id.begin(), by_id.end());
    } else {  // most of the row: by a pass over the ids rather than a comparison sort
      std::vector<bool> member(n, false);
      for (int32_t id : order) member[static_cast<std::size_t>(id)] = true;
      by_id.clear();
      for (std::size_t i = 0; i < n; ++i) {
        if (member[i]) by_id.push_back(static_cast<int32_t>(i));
      }
    }
  }
  // One loop: the sum's chain of dependent adds runs in the shadow of the exps.
  for_each_candidate([&](int32_t id) {
    const double v = weight_of(id);
    w[static_cast<std::size_t>(id)] = v;
    total += v;
  });
  // p of the i-th candidate in order (i < m).
  const auto p_at = [&](std::size_t i) { return w[static_cast<std::size_t>(order[i])] / total; };
  // min-p: the leading candidates with p >= min_p * p_first; p falls along the order, so that is
  // every candidate that passes.
  std::size_t kept = candidates;
  if (o.min_p > 0.0) {
    const double floor = o.min_p * p_at(0);
    if (floor > 0.0) {
      std::size_t passing = 0;
      for_each_candidate(
          [&](int32_t id) { passing += w[static_cast<std::size_t>(id)] / total >= floor ? 1 : 0; });
      kept = std::clamp<std::size_t>(passing, 1, candidates);
    }
  }
  // top-p: the shortest leading run whose p, summed in order, reaches top_p.
  if (o.top_p < 1.0) {
    for (;;) {
      double cumulative = 0.0;
      std::size_t count = 0;
      while (count < m && cumulative < o.top_p) cumulative += p_at(count++);
      if (cumulative >= o.top_p || m == candidates) {
        kept = std::min(kept, std::max<std::size_t>(count, 1));
        break;
      }
      ordered(m + 1);
    }
  }
  // The kept mass, summed in ascending id order: the candidates up to the last kept one, b.
  double mass = 0.0;
  if (kept == candidates) {  // no order needed (without top-k it would be the whole row's)
    for_each_candidate([&](int32_t id) { mass += w[static_cast<std::size_t>(id)] / total; });
  } else {
    ordered(kept);
    const auto b = order[kept - 1];
    const float lb = l[static_cast<std::size_t>(b)];
    for_each_candidate([&](int32_t id) {
      const auto i = static_cast<std::size_t>(id);
      if (id == b || precedes(l[i], id, lb, b)) mass += w[i] / total;
    });
  }
  // The draw: u in [0, mass), walked in order.
  const double u = sample_uniform(o.seed, step) * mass;
  for (;;) {
    double cumulative = 0.0;
    int32_t last_positive = order[0];
    const std::size_t walk = std::min(kept, m);
    for (std::size_t i = 0; i < walk; ++i) {
      const double p = p_at(i);
      cumulative += p;
      if (p > 0.0) last_positive = order[i];
      if (u < cumulative) return order[i];
    }
    if (walk == kept) return last_positive;  // u at the rounding edge of the mass
    ordered(std::min(kept, m * 16));
  }
}

}  // namespace qlinear
