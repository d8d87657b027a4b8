// Sampling: greedy is the argmax; temperature sampling follows the softmax (a chi-square test over
// 20000 seeded draws); top-k / top-p / min-p keep exactly the tokens their definitions keep; the
// repetition penalty divides positive and multiplies negative logits of seen tokens once; the same
// seed and step give the same token; the radix-ordered candidates are the comparator sort's
// order, id for id.
#include "model/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace qlinear {
namespace {

TEST(Sampler, GreedyIsTheFirstArgmax) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, NAN};
  SamplingOptions o;
  EXPECT_EQ(sample_token(logits, {}, o, 0), 1);
}

TEST(Sampler, TemperatureSamplingFollowsTheSoftmax) {
  const std::vector<float> base = {1.0f, 0.0f, 2.0f, -1.0f};
  SamplingOptions o;
  o.temperature = 0.7;
  o.seed = 42;
  std::vector<double> p(base.size());
  double z = 0.0;
  for (std::size_t i = 0; i < base.size(); ++i) z += p[i] = std::exp(base[i] / 0.7);
  for (double& v : p) v /= z;
  std::vector<int> counts(base.size(), 0);
  const int draws = 20000;
  for (int step = 0; step < draws; ++step) {
    std::vector<float> logits = base;
    ++counts[static_cast<std::size_t>(sample_token(logits, {}, o, static_cast<uint64_t>(step)))];
  }
  double chi2 = 0.0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const double expected = p[i] * draws;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 16.27);  // 3 degrees of freedom, p = 0.001
}

TEST(Sampler, TopKTopPAndMinPKeepWhatTheirDefinitionsKeep) {
  const std::vector<float> base = {3.0f, 2.9f, 0.0f, -5.0f, 2.8f};
  const auto support = [&](SamplingOptions o) {
    std::set<int32_t> seen;
    for (int step = 0; step < 4000; ++step) {
      std::vector<float> logits = base;
      seen.insert(sample_token(logits, {}, o, static_cast<uint64_t>(step)));
    }
    return seen;
  };
  SamplingOptions o;
  o.temperature = 1.0;
  o.top_k = 2;
  EXPECT_EQ(support(o), (std::set<int32_t>{0, 1}));
  o.top_k = 0;
  // Probabilities ~ 0.357, 0.323, 0.292, 0.018, ...: the first three reach 0.9.
  o.top_p = 0.9;
  EXPECT_EQ(support(o), (std::set<int32_t>{0, 1, 4}));
  o.top_p = 1.0;
  o.min_p = 0.5;  // keep p >= 0.5 * p_max
  EXPECT_EQ(support(o), (std::set<int32_t>{0, 1, 4}));
  o.min_p = 0.95;
  EXPECT_EQ(support(o), (std::set<int32_t>{0}));
}

TEST(Sampler, RepetitionPenaltyAppliesOncePerSeenToken) {
  std::vector<float> logits = {2.0f, -2.0f, 1.9f};
  SamplingOptions o;
  o.repetition_penalty = 2.0;
  const std::vector<int32_t> seen = {0, 0, 1};
  EXPECT_EQ(sample_token(logits, seen, o, 0), 2);  // 2/2 = 1 < 1.9
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], -4.0f);
}

TEST(Sampler, SameSeedAndStepSameToken) {
  std::vector<float> a = {0.1f, 0.2f, 0.3f, 0.4f};
  std::vector<float> b = a;
  SamplingOptions o;
  o.temperature = 1.0;
  o.seed = 7;
  EXPECT_EQ(sample_token(a, {}, o, 5), sample_token(b, {}, o, 5));
  EXPECT_NE(sample_uniform(7, 5), sample_uniform(8, 5));
  EXPECT_GE(sample_uniform(0, 0), 0.0);
  EXPECT_LT(sample_uniform(~0ull, ~0ull), 1.0);
}

// The candidates' order before it was a radix sort: a std::sort of ids with this comparator
// (partial for top-k), the reference sampling_order must equal id for id.
std::vector<int32_t> comparator_order(const std::vector<float>& logits, std::size_t keep) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](int32_t a, int32_t b) {
                      const float la = logits[static_cast<std::size_t>(a)];
                      const float lb = logits[static_cast<std::size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  order.resize(keep);
  return order;
}

TEST(Sampler, RadixOrderedCandidatesAreTheComparatorSortsOrder) {
  // Logits with many exact ties (values on a coarse grid), signed zeros, -inf entries and a
  // spread like a language model's; every kept count from top-k 1 (the partial sort) to the
  // whole row (the radix sort). Since the warpers after the order are unchanged code, an equal
  // order means equal picks.
  std::mt19937 gen(5);
  std::normal_distribution<float> spread(0.0f, 3.0f);
  const std::size_t vocab = 5000;
  std::vector<float> base(vocab);
  for (std::size_t i = 0; i < vocab; ++i) {
    float v = std::round(spread(gen) * 4.0f) / 4.0f;  // ties
    if (i % 97 == 0) v = (i % 2 == 0) ? 0.0f : -0.0f;
    if (i % 331 == 0) v = -INFINITY;
    base[i] = v;
  }
  base[1234] = 14.0f;  // a clear top, and a tie with it
  base[4321] = 14.0f;
  for (std::size_t keep : {1u, 7u, 50u, 78u, 79u, 4999u, 5000u}) {
    EXPECT_EQ(sampling_order(base, keep), comparator_order(base, keep)) << "keep " << keep;
  }
  // A top made of signed zeros only: they compare equal, so they are ordered by id whatever the
  // sign (a radix key that kept the sign bit would put every -0 after every +0).
  std::vector<float> zeros(1000, -3.0f);
  for (std::size_t i = 0; i < 200; ++i) zeros[i * 5] = i % 3 == 0 ? -0.0f : 0.0f;
  EXPECT_EQ(sampling_order(zeros, 1000), comparator_order(zeros, 1000));
  EXPECT_EQ(sampling_order(zeros, 200), comparator_order(zeros, 200));
  // Picks spread over many tokens (not one token for every case).
  std::set<int32_t> picked;
  SamplingOptions wide;
  wide.temperature = 2.5;
  for (uint64_t step = 0; step < 200; ++step) {
    std::vector<float> logits = base;
    picked.insert(sample_token(logits, {}, wide, step));
  }
  EXPECT_GT(picked.size(), 20u);
}

TEST(Sampler, OptionsAreRangeChecked) {
  SamplingOptions o;
  o.top_p = 0.0;
  EXPECT_FALSE(check_sampling(o).ok());
  o.top_p = 1.0;
  o.temperature = -1.0;
  EXPECT_FALSE(check_sampling(o).ok());
  o.temperature = 1.0;
  o.repetition_penalty = 0.0;
  EXPECT_FALSE(check_sampling(o).ok());
}

}  // namespace
}  // namespace qlinear
