// The kernel contract: run() never allocates (so a runner's decode step costs no heap traffic and
// a CUDA graph could capture it). Every operator new in this binary is counted while armed; every
// registered kernel this CPU runs is prepared for each weight scheme and run at several M and
// output dtypes after one warm-up call, and must allocate nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "support/gptq_pack.h"
#include "support/kernel_run.h"

namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_allocations{0};
}  // namespace

// These replacements pair malloc with free by design; GCC at -O1 inlines them into gtest and
// reports a new/free mismatch it cannot see is ours on both sides.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
  if (g_armed.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
// The nothrow forms (std::stable_sort's temporary buffer) are freed by the plain delete below, so
// they must come from malloc too.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (g_armed.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace qlinear {
namespace {

Canonical int_weights(int bits, bool zeros, bool act_order, std::mt19937& rng) {
  IntWeights w;
  w.bits = bits;
  w.K = 256;
  w.N = 96;
  w.group_size = 64;
  w.num_groups = 4;
  std::vector<uint32_t> codes(static_cast<std::size_t>(w.K * w.N));
  for (uint32_t& c : codes) c = rng() % (1u << bits);
  w.qweight = test::pack_gptq(codes, w.K, w.N, bits);
  w.scales.assign(static_cast<std::size_t>(w.num_groups * w.N), 0.01f);
  if (zeros) w.zeros.assign(w.scales.size(), 3);
  if (act_order) {
    for (int64_t k = 0; k < w.K; ++k) w.g_idx.push_back(static_cast<int32_t>((k * 7) % 4));
  }
  w.bias.assign(static_cast<std::size_t>(w.N), 0.5f);
  Canonical c;
  c.name = "layer";
  c.weights = std::move(w);
  c.shard_sizes = {96};
  return c;
}

Canonical fp8_weights(Fp8WeightGranularity g, ActQuant act, std::mt19937& rng) {
  Fp8Weights w;
  w.K = 256;
  w.N = 96;
  w.granularity = g;
  w.activation = act;
  w.qweight.resize(static_cast<std::size_t>(w.N * w.K));
  for (uint8_t& q : w.qweight) q = static_cast<uint8_t>(rng() % 0x70);
  if (g == Fp8WeightGranularity::kBlock) {
    w.block_n = w.block_k = 128;
    w.scale.assign(2, 1e-3f);
  } else {
    w.scale.assign(96, 1e-3f);
  }
  w.input_scale = 0.01f;
  Canonical c;
  c.name = "layer";
  c.weights = std::move(w);
  c.shard_sizes = {96};
  return c;
}

Canonical dense_weights(DType dtype) {
  DenseWeights w;
  w.K = 256;
  w.N = 96;
  w.dtype = dtype;
  w.data.assign(static_cast<std::size_t>(w.N * w.K) * dtype_size(dtype), std::byte{0x3c});
  Canonical c;
  c.name = "layer";
  c.weights = std::move(w);
  c.shard_sizes = {96};
  return c;
}

struct Case {
  Canonical weights;
  Fp8Mode mode = Fp8Mode::kNone;
  bool int8 = false;
};

TEST(NoAllocation, EveryRunnableKernelRunsWithoutTouchingTheHeap) {
  std::mt19937 rng(3);
  std::vector<Case> cases;
  for (int bits : {4, 8}) {
    for (bool act_order : {false, true}) {
      cases.push_back({int_weights(bits, true, act_order, rng)});
      cases.push_back({int_weights(bits, false, act_order, rng), Fp8Mode::kNone, true});
    }
  }
  cases.push_back(
      {fp8_weights(Fp8WeightGranularity::kChannel, ActQuant::kNone, rng), Fp8Mode::kW8A16});
  cases.push_back(
      {fp8_weights(Fp8WeightGranularity::kChannel, ActQuant::kDynamicToken, rng), Fp8Mode::kW8A8});
  cases.push_back(
      {fp8_weights(Fp8WeightGranularity::kBlock, ActQuant::kDynamicGroup, rng), Fp8Mode::kW8A8});
  cases.push_back({dense_weights(DType::kBF16)});
  cases.push_back({dense_weights(DType::kF16)});
  cases.push_back({dense_weights(DType::kF32)});
  Result<Device> cpu = detect_device("cpu");
  ASSERT_TRUE(cpu.ok());
  int runs = 0;
  for (const LinearKernel* kernel : all_kernels()) {
    for (const Case& c : cases) {
      for (DType act : {DType::kF32, DType::kBF16}) {
        for (DType out : {DType::kF32, DType::kBF16}) {
          LinearProblem p = LinearProblem::from_canonical(c.weights);
          p.fp8_mode = c.mode;
          p.int8_activations = c.int8;
          p.act_dtype = act;
          p.out_dtype = out;
          p.m_max = 300;
          Verdict verdict = kernel->check(p, *cpu);
          // A kernel of one bucket of M (a decode kernel) runs the rows below its first
          // breakpoint.
          if (verdict.reason == Reason::kMRange && !kernel->m_breakpoints().empty()) {
            p.m_max = kernel->m_breakpoints().front() - 1;
            verdict = kernel->check(p, *cpu);
          }
          if (!verdict.ok()) continue;
          auto prepared = test::prepare_on_cpu(*kernel, c.weights, p);
          ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
          for (int64_t M : {1, 5, 17, 300}) {
            if (M > p.m_max) continue;
            Tensor x = test::host_tensor(act, {M, 256});
            Tensor y = test::host_tensor(out, {M, 96});
            Tensor ws = test::host_tensor(
                DType::kU8, {static_cast<int64_t>((*prepared)->workspace_bytes(M)) + 1});
            ExecContext ctx;
            ctx.workspace = {ws.data(), ws.nbytes(), Location::host()};
            ASSERT_TRUE((*prepared)->run(x.matrix(), y.matrix(), ctx).ok());  // warm-up
            g_allocations = 0;
            g_armed = true;
            const Status s = (*prepared)->run(x.matrix(), y.matrix(), ctx);
            g_armed = false;
            ASSERT_TRUE(s.ok()) << s.to_string();
            EXPECT_EQ(g_allocations.load(), 0)
                << kernel->name() << " allocated during run of " << p.to_string() << " M=" << M;
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 0);
}

}  // namespace
}  // namespace qlinear
