#include "kernels/cpu/thread_budget.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

namespace qlinear {
namespace {

std::atomic<int> g_in_use{0};

}  // namespace

int max_threads() { return std::max(1, omp_get_num_procs()); }

ThreadBudget::ThreadBudget(int requested, int64_t jobs) {
  if (omp_in_parallel()) return;  // the caller's team already holds the cores
  const int cores = max_threads();
  const int wanted = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(requested > 0 ? requested : omp_get_max_threads(), jobs), 1, 1 << 16));
  int used = g_in_use.load();
  int grant = 1;
  do {
    grant = std::clamp(std::min(wanted, cores - used), 1, wanted);
  } while (!g_in_use.compare_exchange_weak(used, used + grant));
  threads_ = grant;
  claimed_ = grant;
}

ThreadBudget::~ThreadBudget() {
  if (claimed_ > 0) g_in_use.fetch_sub(claimed_);
}

int ThreadBudget::in_use() { return g_in_use.load(); }

}  // namespace qlinear
