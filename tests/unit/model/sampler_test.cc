// Sampling: greedy is the argmax; temperature sampling follows the softmax (a chi-square test over
// 20000 seeded draws); top-k / top-p / min-p keep exactly the tokens their definitions keep; the
// repetition penalty divides positive and multiplies negative logits of seen tokens once; the same
// seed and step give the same token; the radix-ordered candidates are the comparator sort's
// order, id for id; the picks are those of sample_token's definition read literally.
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

// sample_token's definition (sampler.h) read literally: every candidate ordered by the
// comparator sort, every sum a plain loop. The implementation orders only the leading candidates
// it needs; the picks must be the same, id for id.
// `all`: every id in the comparator order of the logits with NaN as -inf.
int32_t literal_sample(std::vector<float> logits, const std::vector<int32_t>& all,
                       const SamplingOptions& o, uint64_t step) {
  for (float& v : logits) {
    if (std::isnan(v)) v = -INFINITY;
  }
  const std::size_t n = logits.size();
  const std::size_t candidates =
      o.top_k > 0 && static_cast<std::size_t>(o.top_k) < n ? static_cast<std::size_t>(o.top_k) : n;
  const std::vector<int32_t> order(all.begin(),
                                   all.begin() + static_cast<std::ptrdiff_t>(candidates));
  const float first = logits[static_cast<std::size_t>(order[0])];
  if (first == INFINITY) return order[0];
  if (first == -INFINITY) return 0;
  std::vector<double> w(n, 0.0);  // by id
  for (int32_t id : order) {
    const double v = logits[static_cast<std::size_t>(id)];
    w[static_cast<std::size_t>(id)] =
        std::isfinite(v) ? std::exp((v - static_cast<double>(first)) / o.temperature) : 0.0;
  }
  double total = 0.0;
  for (double v : w) total += v;
  std::vector<double> p(candidates);  // in order
  for (std::size_t i = 0; i < candidates; ++i) p[i] = w[static_cast<std::size_t>(order[i])] / total;
  std::size_t kept = candidates;
  if (o.top_p < 1.0) {
    double cumulative = 0.0;
    std::size_t count = 0;
    while (count < candidates) {
      cumulative += p[count++];
      if (cumulative >= o.top_p) break;
    }
    kept = std::max<std::size_t>(count, 1);
  }
  if (o.min_p > 0.0) {
    const double floor = o.min_p * p[0];
    std::size_t count = 1;
    while (count < kept && p[count] >= floor) ++count;
    kept = count;
  }
  std::vector<bool> in_kept(n, false);
  for (std::size_t i = 0; i < kept; ++i) in_kept[static_cast<std::size_t>(order[i])] = true;
  double mass = 0.0;
  for (std::size_t i = 0; i < n; ++i) mass += in_kept[i] ? w[i] / total : 0.0;
  const double u = sample_uniform(o.seed, step) * mass;
  double cumulative = 0.0;
  int32_t last_positive = order[0];
  for (std::size_t i = 0; i < kept; ++i) {
    cumulative += p[i];
    if (p[i] > 0.0) last_positive = order[i];
    if (u < cumulative) return order[i];
  }
  return last_positive;
}

TEST(Sampler, PicksAreThoseOfTheLiteralDefinition) {
  // Rows like a language model's (a spread of 3, a clear top or not), with exact ties, signed
  // zeros, -inf and NaN; vocabularies past the first ordered block (64) and past 16 x 64 so the
  // ordered prefix grows twice; every warper alone and together, temperatures that keep few and
  // many tokens. The draws reach deep into the order (top-p 1 at temperature 2.5).
  std::mt19937 gen(11);
  std::normal_distribution<float> spread(0.0f, 3.0f);
  struct Case {
    double temperature;
    int top_k;
    double top_p;
    double min_p;
  };
  const Case cases[] = {{1.0, 0, 1.0, 0.0},      {0.7, 0, 0.9, 0.0},  {2.5, 0, 1.0, 0.0},
                        {0.6, 40, 0.95, 0.0},    {1.0, 0, 1.0, 0.05}, {1.3, 0, 0.98, 0.001},
                        {0.9, 5000, 0.999, 0.0}, {1.0, 3, 1.0, 0.0},  {4.0, 0, 0.9999, 0.0}};
  int draws = 0;
  std::set<int32_t> deep;  // picks beyond the first 1024 candidates
  for (std::size_t vocab : {50u, 700u, 20000u}) {
    for (int row = 0; row < 3; ++row) {
      std::vector<float> base(vocab);
      for (std::size_t i = 0; i < vocab; ++i) {
        float v = spread(gen);
        if (row == 1) v = std::round(v * 2.0f) / 2.0f;  // many exact ties
        if (i % 89 == 0) v = (i % 2 == 0) ? 0.0f : -0.0f;
        if (i % 301 == 7) v = -INFINITY;
        if (row == 2 && i % 499 == 3) v = NAN;
        base[i] = v;
      }
      if (row == 0) base[vocab / 3] = 9.0f;
      std::vector<float> clean = base;
      for (float& v : clean) {
        if (std::isnan(v)) v = -INFINITY;
      }
      const std::vector<int32_t> by_order = comparator_order(clean, vocab);
      for (const Case& c : cases) {
        SamplingOptions o;
        o.temperature = c.temperature;
        o.top_k = c.top_k;
        o.top_p = c.top_p;
        o.min_p = c.min_p;
        o.seed = 1000 + vocab + static_cast<uint64_t>(row);
        for (uint64_t step = 0; step < 30; ++step) {
          std::vector<float> logits = base;
          const int32_t got = sample_token(logits, {}, o, step);
          ASSERT_EQ(got, literal_sample(base, by_order, o, step))
              << "vocab " << vocab << " row " << row << " T " << c.temperature << " top_k "
              << c.top_k << " top_p " << c.top_p << " min_p " << c.min_p << " step " << step;
          ASSERT_FALSE(std::isnan(base[static_cast<std::size_t>(got)]));
          ++draws;
          if (vocab == 20000u) {
            const auto at = std::find(by_order.begin(), by_order.end(), got) - by_order.begin();
            if (at >= 1024) deep.insert(got);
          }
        }
      }
    }
  }
  EXPECT_EQ(draws, 3 * 3 * 9 * 30);
  EXPECT_GT(deep.size(), 5u);  // the ordered prefix had to grow past 1024 candidates
}

TEST(Sampler, InfiniteAndEmptyRows) {
  SamplingOptions o;
  o.temperature = 1.0;
  std::vector<float> inf = {0.0f, INFINITY, 3.0f, INFINITY};
  EXPECT_EQ(sample_token(inf, {}, o, 0), 1);  // the softmax's limit: the first +inf
  std::vector<float> none = {-INFINITY, NAN, -INFINITY};
  EXPECT_EQ(sample_token(none, {}, o, 0), 0);  // nothing above -inf: greedy_token's 0
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
