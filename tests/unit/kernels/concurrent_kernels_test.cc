// Every CPU kernel that runs on this machine, prepared once and run from several application
// threads at once (each call with its own OpenMP team through ThreadBudget), gives the bits of a
// single call. Under ThreadSanitizer (kernels_tsan_tests, scripts/test.sh) this is the check that
// prepared kernels share no mutable state between calls.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "convert/canonical.h"
#include "core/tensor.h"
#include "kernels/cpu/thread_budget.h"
#include "kernels/registry.h"
#include "qlinear/dtype.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

constexpr int kCallers = 4;

Canonical int_weights(std::mt19937& rng) {
  IntWeights w;
  w.bits = 4;
  w.K = 256;
  w.N = 192;
  w.group_size = 64;
  w.num_groups = 4;
  w.qweight.resize(static_cast<size_t>(w.K / 8 * w.N));
  for (uint32_t& word : w.qweight) word = static_cast<uint32_t>(rng());
  w.scales.assign(static_cast<size_t>(w.num_groups * w.N), 0.01f);
  w.zeros.assign(static_cast<size_t>(w.num_groups * w.N), 7);
  Canonical c;
  c.name = "test.int";
  c.weights = std::move(w);
  c.shard_sizes = {192};
  return c;
}

Canonical fp8_weights(std::mt19937& rng) {
  Fp8Weights w;
  w.K = 256;
  w.N = 160;
  w.granularity = Fp8WeightGranularity::kChannel;
  w.activation = ActQuant::kDynamicToken;  // runs as W8A8 or W8A16, as the mode says
  w.qweight.resize(static_cast<size_t>(w.N * w.K));
  for (uint8_t& q : w.qweight) {
    q = static_cast<uint8_t>(rng() % 0x7F);  // finite codes, both signs below
    if (rng() % 2) q |= 0x80;
  }
  w.scale.assign(static_cast<size_t>(w.N), 0.02f);
  Canonical c;
  c.name = "test.fp8";
  c.weights = std::move(w);
  c.shard_sizes = {160};
  return c;
}

Canonical dense_weights(std::mt19937& rng) {
  DenseWeights w;
  w.K = 256;
  w.N = 96;
  w.dtype = DType::kBF16;
  std::vector<uint16_t> bits(static_cast<size_t>(w.N * w.K));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (uint16_t& b : bits) b = f32_to_bf16(value(rng));
  const auto* bytes = reinterpret_cast<const std::byte*>(bits.data());
  w.data.assign(bytes, bytes + bits.size() * sizeof(uint16_t));
  Canonical c;
  c.name = "test.dense";
  c.weights = std::move(w);
  c.shard_sizes = {96};
  return c;
}

// Runs `prepared` alone, then from kCallers threads at once; every result must be the same bits.
void expect_concurrent_calls_agree(const PreparedLinear& prepared, int64_t M, int64_t K,
                                   std::mt19937& rng) {
  Tensor x = test::host_tensor(DType::kF32, {M, K});
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = value(rng);
  auto run_once = [&](std::vector<float>* out) {
    Result<Tensor> y = test::run_on_cpu(prepared, x);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    *out = test::as_floats(*y);
  };
  std::vector<float> alone;
  run_once(&alone);
  ASSERT_EQ(alone.size(), static_cast<std::size_t>(M * prepared.problem().N));
  std::vector<std::vector<float>> results(kCallers);
  std::vector<std::thread> callers;
  for (auto& result : results) callers.emplace_back([&, out = &result] { run_once(out); });
  for (std::thread& t : callers) t.join();
  // Bit equality (NaN-safe: a NaN from the poisoned output would differ from a real value).
  for (const auto& result : results) {
    ASSERT_EQ(result.size(), alone.size());
    EXPECT_EQ(std::memcmp(result.data(), alone.data(), alone.size() * sizeof(float)), 0);
  }
}

TEST(ConcurrentKernels, EveryCpuKernelGivesTheBitsOfASingleCall) {
  Result<Device> device = detect_device("cpu");
  ASSERT_TRUE(device.ok());
  std::mt19937 rng(11);
  const std::vector<Canonical> weights = {int_weights(rng), fp8_weights(rng), dense_weights(rng)};
  int ran = 0;
  for (const LinearKernel* kernel : kernels_for(Platform::kCpu)) {
    for (const Canonical& w : weights) {
      for (Fp8Mode mode : {Fp8Mode::kW8A16, Fp8Mode::kW8A8}) {
        LinearProblem problem = LinearProblem::from_canonical(w);
        problem.act_dtype = DType::kF32;
        if (problem.scheme == WeightScheme::kFp8) {
          problem.fp8_mode = mode;
        } else if (mode == Fp8Mode::kW8A8) {
          continue;  // one pass for the other schemes
        }
        if (!kernel->check(problem, *device).ok()) continue;
        SCOPED_TRACE(std::string(kernel->name()) + " " + problem.to_string());
        auto prepared = test::prepare_on_cpu(*kernel, w, problem);
        ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
        // M = 1 (decode paths) and M = 16 (the panel / prefill paths).
        for (int64_t M : {1, 16}) expect_concurrent_calls_agree(**prepared, M, w.K(), rng);
        ++ran;
      }
    }
  }
  EXPECT_GE(ran, 4) << "expected the reference, generic, blas and native kernels";
  EXPECT_EQ(ThreadBudget::in_use(), 0);
}

}  // namespace
}  // namespace qlinear
