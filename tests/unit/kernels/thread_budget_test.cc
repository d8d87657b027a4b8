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

namespace qlinear {
namespace {

TEST(ThreadBudget, ASecondCallGetsWhatTheFirstLeavesAndClaimsAreReturned) {
  const int cores = omp_get_num_procs();
  ASSERT_EQ(ThreadBudget::in_use(), 0);
  {
    Stream all;
    const ThreadBudget first(all, 1000);
    EXPECT_EQ(first.threads(), std::min(cores, omp_get_max_threads()));
    const ThreadBudget second(all, 1000);
    EXPECT_EQ(second.threads(), std::max(1, cores - first.threads()));
    EXPECT_EQ(ThreadBudget::in_use(), first.threads() + second.threads());
  }
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

TEST(ThreadBudget, RequestedThreadsAndJobsBoundTheClaim) {
  Stream one;
  one.threads = 1;
  EXPECT_EQ(ThreadBudget(one, 1000).threads(), 1);
  Stream all;
  EXPECT_EQ(ThreadBudget(all, 1).threads(), 1);  // one job: no team
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

TEST(ThreadBudget, InsideAParallelRegionACallRunsOnItsOwnThread) {
  std::vector<int> seen(4, -1);
#pragma omp parallel num_threads(4)
  {
    Stream all;
    const ThreadBudget budget(all, 1000);
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
  auto prepared = kernel->prepare(weights, problem, *device);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  Tensor x(DType::kF32, {8, w.K});
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);

  auto run_once = [&](std::vector<float>* out) {
    Tensor y(DType::kF32, {8, w.N});
    Stream stream;
    ASSERT_TRUE((*prepared)->run(x.view(), y.view(), stream).ok());
    out->assign(y.data_as<float>(), y.data_as<float>() + y.numel());
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
