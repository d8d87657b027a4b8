// ThreadBudget: calls in flight together never hold more threads than the machine has cores
// (each still gets one), claims are returned, a call inside an OpenMP region takes no team, and
// kernels called from several application threads at once give the same bits as one call alone.
#include "kernels/cpu/thread_budget.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "kernels/registry.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

TEST(ThreadBudget, ASecondCallGetsWhatTheFirstLeavesAndClaimsAreReturned) {
  const int cores = omp_get_num_procs();
  ASSERT_EQ(ThreadBudget::in_use(), 0);
  {
    const ThreadBudget first(0, 1000);
    EXPECT_EQ(first.threads(), std::min(cores, omp_get_max_threads()));
    EXPECT_LE(first.threads(), max_threads());
    const ThreadBudget second(0, 1000);
    EXPECT_EQ(second.threads(), std::max(1, cores - first.threads()));
    EXPECT_EQ(ThreadBudget::in_use(), first.threads() + second.threads());
  }
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

TEST(ThreadBudget, RequestedThreadsAndJobsBoundTheClaim) {
  EXPECT_EQ(ThreadBudget(1, 1000).threads(), 1);
  EXPECT_EQ(ThreadBudget(0, 1).threads(), 1);  // one job: no team
  // More than the machine has is never granted (per-thread workspace slots are sized by it).
  EXPECT_LE(ThreadBudget(1000, 1000).threads(), max_threads());
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

TEST(ThreadBudget, InsideAParallelRegionACallRunsOnItsOwnThread) {
  std::vector<int> seen(4, -1);
#pragma omp parallel num_threads(4)
  {
    const ThreadBudget budget(0, 1000);
    seen[omp_get_thread_num()] = budget.threads();
  }
  for (int threads : seen) EXPECT_TRUE(threads == 1 || threads == -1);
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

TEST(ThreadBudget, ConcurrentKernelCallsGiveTheBitsOfASingleCall) {
  // cpu.int.generic runs everywhere; its column tiles do not depend on the thread count.
  const LinearKernel* kernel = find_kernel("cpu.int.generic");
  ASSERT_NE(kernel, nullptr);
  Result<Device> device = detect_device("cpu");
  ASSERT_TRUE(device.ok());
  IntWeights w;
  w.bits = 4;
  w.K = 256;
  w.N = 320;
  w.group_size = 64;
  w.num_groups = 4;
  std::mt19937 rng(5);
  w.qweight.resize(static_cast<size_t>(w.K / 8 * w.N));
  for (uint32_t& word : w.qweight) word = static_cast<uint32_t>(rng());
  w.scales.assign(static_cast<size_t>(w.num_groups * w.N), 0.01f);
  Canonical weights;
  weights.name = "model.layers.0.mlp.up_proj";
  weights.weights = w;
  weights.shard_sizes = {w.N};
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  ASSERT_TRUE(kernel->check(problem, *device).ok());
  auto prepared = test::prepare_on_cpu(*kernel, weights, problem);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  Tensor x = test::host_tensor(DType::kF32, {8, w.K});
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);

  // Each caller has its own workspace (run_on_cpu allocates one): the thread-safety rule.
  auto run_once = [&](std::vector<float>* out) {
    Result<Tensor> y = test::run_on_cpu(**prepared, x);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    *out = test::as_floats(*y);
  };
  std::vector<float> alone;
  run_once(&alone);
  std::vector<std::vector<float>> results(6);
  std::vector<std::thread> callers;
  for (auto& result : results) callers.emplace_back([&, out = &result] { run_once(out); });
  for (std::thread& t : callers) t.join();
  for (const auto& result : results) EXPECT_EQ(result, alone);
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

}  // namespace
}  // namespace qlinear
