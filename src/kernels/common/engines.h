// Building a kernel's engine list (LinearKernel::engines) from a function that names the engine
// a call of M rows runs and the values of M where that name may change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace qlinear {

// Consecutive ranges of the problem's M range with one engine name each, cut at the `switches`
// inside it (an M where engine_at(M) may differ from engine_at(M - 1)).
template <class EngineAt>
std::vector<Engine> engines_over(const LinearProblem& problem, std::vector<int64_t> switches,
                                 EngineAt&& engine_at) {
  std::sort(switches.begin(), switches.end());
  std::vector<Engine> engines;
  int64_t start = problem.m_min;
  std::string name = engine_at(start);
  for (int64_t s : switches) {
    if (s <= start || s > problem.m_max) continue;
    std::string next = engine_at(s);
    if (next == name) continue;
    engines.push_back({start, s - 1, name});
    start = s;
    name = std::move(next);
  }
  engines.push_back({start, problem.m_max, name});
  return engines;
}

}  // namespace qlinear
