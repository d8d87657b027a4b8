// Threads for one kernel call, shared fairly when several application threads call kernels at
// once: the calls in flight together never claim more threads than the machine has cores (each
// call still gets at least one). Inside an OpenMP parallel region a call runs on its caller's
// thread only. RAII: the claim is returned when the budget goes out of scope.
#pragma once

#include <cstdint>

namespace qlinear {

// The most threads a ThreadBudget ever grants (the cores this process may use): kernels size
// their per-thread workspace slots by it.
int max_threads();

class ThreadBudget {
 public:
  // Claims up to min(requested (0: all cores), jobs) threads from what other calls in flight
  // leave free; never more than max_threads().
  ThreadBudget(int requested, int64_t jobs);
  ~ThreadBudget();
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

  int threads() const { return threads_; }

  // Threads all calls in flight hold now (for tests).
  static int in_use();

 private:
  int threads_ = 1;
  int claimed_ = 0;  // what this call added to in_use (0 inside a parallel region)
};

}  // namespace qlinear
