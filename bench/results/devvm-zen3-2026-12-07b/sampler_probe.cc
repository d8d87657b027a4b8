// sample_token's cost on a 128256-logit row (Llama 3's vocabulary): a language-model-like row
// (logit = 15 - 2.5 log(1 + rank) + N(0, 0.5), ranks a random permutation of the ids) and a flat
// N(0, 3) row, best of 30 calls per case. Build from the repository root against one sampler.cc:
//   g++ -O2 -std=c++20 -Isrc -Iinclude bench/results/devvm-zen3-2026-12-07b/sampler_probe.cc \
//     src/model/sampler.cc -o /tmp/sampler_probe -lfmt
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>
#include "model/sampler.h"
static double best_ms(const std::vector<float>& base, qlinear::SamplingOptions o) {
  double best = 1e9;
  for (int r = 0; r < 30; ++r) {
    std::vector<float> l = base;
    auto t0 = std::chrono::steady_clock::now();
    volatile int id = qlinear::sample_token(l, {}, o, r);
    (void)id;
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
int main() {
  const int V = 128256;
  std::mt19937 rng(1);
  std::vector<int> rank(V);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), rng);
  std::normal_distribution<float> noise(0.f, 0.5f), flat(0.f, 3.f);
  std::vector<float> lm(V), fl(V);
  for (int i = 0; i < V; ++i) {
    lm[i] = 15.f - 2.5f * std::log1p((float)rank[i]) + noise(rng);
    fl[i] = flat(rng);
  }
  struct C {
    const char* name;
    double t, p, mp;
    int k;
  } cs[] = {{"T0.7 top_p0.9", 0.7, 0.9, 0, 0},
            {"T1.0 (plain)", 1.0, 1.0, 0, 0},
            {"T0.6 top_k40 top_p0.95", 0.6, 0.95, 0, 40},
            {"T1.0 min_p0.05", 1.0, 1.0, 0.05, 0}};
  for (auto& c : cs) {
    qlinear::SamplingOptions o;
    o.temperature = c.t;
    o.top_p = c.p;
    o.min_p = c.mp;
    o.top_k = c.k;
    o.seed = 5;
    std::printf("%-24s lm-like %.3f ms   flat %.3f ms\n", c.name, best_ms(lm, o), best_ms(fl, o));
  }
}
