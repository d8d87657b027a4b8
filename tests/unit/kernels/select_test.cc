// Selection: policy parsing, the ordered walk with every verdict kept, the FP8 mode table, the
// dispatch log and the no-kernel error. Fake kernels give controlled behaviour; the real
// registry is checked on simulated devices, where the expected verdicts follow from each
// kernel's documented limits (the header block of its file).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel.h"
#include "kernels/fp8_mode.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/registry.h"
#include "kernels/select.h"

namespace qlinear {
namespace {

using CheckFn = std::function<Verdict(const LinearProblem&, const Device&)>;

class FakeKernel final : public LinearKernel {
 public:
  FakeKernel(std::string name, Family family, CheckFn check)
      : name_(std::move(name)), family_(family), check_(std::move(check)) {}
  std::string_view name() const override { return name_; }
  Family family() const override { return family_; }
  Platform platform() const override { return Platform::kCpu; }
  Verdict check(const LinearProblem& problem, const Device& device) const override {
    ++calls;
    return check_(problem, device);
  }
  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical&, const LinearProblem&,
                                                  DeviceContext&) const override {
    return make_error(ErrorCode::kUnsupported, "fake kernel {}", name_);
  }
  mutable int calls = 0;

 private:
  std::string name_;
  Family family_;
  CheckFn check_;
};

CheckFn accept_all() {
  return [](const LinearProblem&, const Device&) { return Verdict::accept(); };
}
CheckFn reject_with(Reason reason, std::string detail) {
  return [=](const LinearProblem&, const Device&) { return Verdict::reject(reason, detail); };
}
// Accepts FP8 problems in `mode` only.
CheckFn fp8_mode_only(Fp8Mode mode) {
  return [=](const LinearProblem& p, const Device&) {
    if (p.scheme != WeightScheme::kFp8) return Verdict::reject(Reason::kScheme, "fp8 only");
    if (p.fp8_mode != mode) return Verdict::reject(Reason::kFp8Mode, "other mode");
    return Verdict::accept();
  };
}

LinearProblem int4_problem(int64_t K = 4096, int64_t N = 11008) {
  LinearProblem p;
  p.scheme = WeightScheme::kInt;
  p.bits = 4;
  p.group_size = 128;
  p.K = p.full_K = K;
  p.N = p.full_N = N;
  return p;
}

LinearProblem fp8_problem(ActQuant act, Fp8WeightGranularity g = Fp8WeightGranularity::kChannel) {
  LinearProblem p;
  p.scheme = WeightScheme::kFp8;
  p.fp8_weight = g;
  if (g == Fp8WeightGranularity::kBlock) p.block_n = p.block_k = 128;
  p.act_quant = act;
  p.K = p.full_K = 4096;
  p.N = p.full_N = 4096;
  return p;
}

Device device_of(const char* target) {
  auto device = simulate_target(target);
  EXPECT_TRUE(device.ok()) << target;
  return device.ok() ? *device : Device{};
}

SelectionPolicy policy_of(const char* backend, const char* kernel = "", const char* disabled = "") {
  auto policy = make_policy(backend, kernel, disabled);
  EXPECT_TRUE(policy.ok()) << policy.status().to_string();
  return policy.ok() ? *policy : SelectionPolicy{};
}

// "name=code" per candidate, "ok" for acceptance: the whole verdict table in one comparable list.
std::vector<std::string> verdict_table(const Selection& selection) {
  std::vector<std::string> rows;
  for (const Candidate& c : selection.candidates) {
    rows.push_back(fmt::format("{}={}", c.kernel->name(),
                               c.verdict.ok() ? "ok" : reason_code(c.verdict.reason)));
  }
  return rows;
}

// --- with fake kernels -----------------------------------------------------------------------

class FakeSelectTest : public ::testing::Test {
 protected:
  FakeKernel native_a{"fake.native.a", Family::kNative, reject_with(Reason::kBits, "bits=4")};
  FakeKernel native_b{"fake.native.b", Family::kNative, accept_all()};
  FakeKernel blas_c{"fake.blas.c", Family::kBlas, accept_all()};
  FakeKernel ref_d{"fake.reference.d", Family::kReference, accept_all()};
  std::vector<const LinearKernel*> kernels{&native_a, &native_b, &blas_c, &ref_d};
  Device cpu = device_of("cpu:avx2");

  SelectionPolicy policy(const char* backend, const char* kernel = "", const char* disabled = "") {
    auto p = make_policy(backend, kernel, disabled, kernels);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? *p : SelectionPolicy{};
  }
};

TEST_F(FakeSelectTest, FirstAcceptedWinsAndEveryCandidateIsEvaluated) {
  auto s = select_from(kernels, int4_problem(), cpu, policy("auto"), "layer");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->kernel, &native_b);
  EXPECT_THAT(verdict_table(*s), ::testing::ElementsAre("fake.native.a=bits", "fake.native.b=ok",
                                                        "fake.blas.c=ok", "fake.reference.d=ok"));
  EXPECT_EQ(blas_c.calls, 1);  // evaluated although a kernel was already chosen
  EXPECT_EQ(s->candidates[0].verdict.detail, "bits=4");
}

TEST_F(FakeSelectTest, DisabledKernelsAreSkippedWithoutCheck) {
  auto s = select_from(kernels, int4_problem(), cpu,
                       policy("auto", "", " fake.native.b , fake.blas.c"), "layer");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kernel, &ref_d);
  EXPECT_THAT(verdict_table(*s),
              ::testing::ElementsAre("fake.native.a=bits", "fake.native.b=disabled-by-user",
                                     "fake.blas.c=disabled-by-user", "fake.reference.d=ok"));
  EXPECT_EQ(native_b.calls, 0);
  EXPECT_EQ(blas_c.calls, 0);
}

TEST_F(FakeSelectTest, RequestedKernelOnly) {
  auto s = select_from(kernels, int4_problem(), cpu, policy("auto", "fake.blas.c"), "layer");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kernel, &blas_c);
  EXPECT_THAT(verdict_table(*s),
              ::testing::ElementsAre("fake.native.a=not-requested", "fake.native.b=not-requested",
                                     "fake.blas.c=ok", "fake.reference.d=not-requested"));
}

TEST_F(FakeSelectTest, BackendFilters) {
  auto blas = select_from(kernels, int4_problem(), cpu, policy("blas"), "layer");
  ASSERT_TRUE(blas.ok());
  EXPECT_EQ(blas->kernel, &blas_c);
  EXPECT_THAT(verdict_table(*blas),
              ::testing::ElementsAre("fake.native.a=backend-filter", "fake.native.b=backend-filter",
                                     "fake.blas.c=ok", "fake.reference.d=backend-filter"));
  auto reference = select_from(kernels, int4_problem(), cpu, policy("reference"), "layer");
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(reference->kernel, &ref_d);
  auto native = select_from(kernels, int4_problem(), cpu, policy("native"), "layer");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native->kernel, &native_b);
}

TEST_F(FakeSelectTest, NothingFitsListsEveryCandidateWithReasonAndRemedy) {
  // The requested kernel rejects: no fallback to the others.
  auto s = select_from(kernels, int4_problem(), cpu, policy("auto", "fake.native.a"),
                       "model.layers.0.mlp.down_proj");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kNoKernel);
  const std::string& message = s.status().message();
  EXPECT_NE(message.find("model.layers.0.mlp.down_proj"), std::string::npos) << message;
  EXPECT_NE(message.find("int4:g128:K4096:N11008:a=bf16"), std::string::npos) << message;
  EXPECT_NE(message.find("\n  fake.native.a: bits: bits=4"), std::string::npos) << message;
  EXPECT_NE(message.find("\n  fake.native.b: not-requested: --kernel fake.native.a (remedy: " +
                         std::string(reason_remedy(Reason::kNotRequested)) + ")"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\n  fake.reference.d: not-requested"), std::string::npos) << message;
}

TEST_F(FakeSelectTest, EvaluateNeverFails) {
  const Selection s =
      evaluate_kernels(kernels, int4_problem(), cpu, policy("auto", "fake.native.a"), "layer");
  EXPECT_EQ(s.kernel, nullptr);
  EXPECT_EQ(s.candidates.size(), 4u);
}

TEST_F(FakeSelectTest, PolicyErrors) {
  auto backend = make_policy("torch", "", "", kernels);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(backend.status().message().find("\"torch\""), std::string::npos);
  EXPECT_NE(backend.status().message().find("auto, native, blas or reference"), std::string::npos);

  auto kernel = make_policy("auto", "fake.native.z", "", kernels);
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("--kernel \"fake.native.z\""), std::string::npos);
  EXPECT_NE(kernel.status().message().find("fake.native.a, fake.native.b, fake.blas.c"),
            std::string::npos);

  // Unknown names in QLINEAR_DISABLED_KERNELS are errors, not silently ignored.
  auto disabled = make_policy("auto", "", "fake.native.a,fake.typo", kernels);
  ASSERT_FALSE(disabled.ok());
  EXPECT_NE(disabled.status().message().find("QLINEAR_DISABLED_KERNELS: \"fake.typo\""),
            std::string::npos);

  auto both = make_policy("auto", "fake.blas.c", "fake.blas.c", kernels);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("QLINEAR_DISABLED_KERNELS"), std::string::npos);

  auto excluded = make_policy("native", "fake.blas.c", "", kernels);
  ASSERT_FALSE(excluded.ok());
  EXPECT_NE(excluded.status().message().find("--linear-backend native"), std::string::npos);

  auto fine = make_policy("", "", " , fake.blas.c,,", kernels);
  ASSERT_TRUE(fine.ok()) << fine.status().to_string();
  EXPECT_EQ(fine->backend, LinearBackend::kAuto);
  EXPECT_EQ(fine->disabled, std::vector<std::string>{"fake.blas.c"});
}

TEST_F(FakeSelectTest, DispatchLogHasOneReproducerLinePerCandidate) {
  ASSERT_EQ(setenv("QLINEAR_VERBOSE", "dispatch", 1), 0);
  ::testing::internal::CaptureStderr();
  const Selection s =
      evaluate_kernels(kernels, int4_problem(), cpu, policy("auto"), "model.layers.1.o_proj");
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(unsetenv("QLINEAR_VERBOSE"), 0);

  std::istringstream lines(log);
  std::string line;
  std::vector<std::string> seen;
  while (std::getline(lines, line)) seen.push_back(line);
  ASSERT_EQ(seen.size(), kernels.size()) << log;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_NE(seen[i].find("model.layers.1.o_proj"), std::string::npos) << seen[i];
    EXPECT_NE(seen[i].find(std::string(kernels[i]->name())), std::string::npos) << seen[i];
    // The problem field parses back to the selected problem.
    const auto start = seen[i].find("model.layers.1.o_proj ") + 22;
    const std::string problem_text = seen[i].substr(start, seen[i].find(' ', start) - start);
    auto parsed = LinearProblem::parse(problem_text);
    ASSERT_TRUE(parsed.ok()) << seen[i];
    EXPECT_EQ(parsed->to_string(), s.problem.to_string());
  }
  EXPECT_NE(seen[0].find("rejected (bits: bits=4)"), std::string::npos) << seen[0];
  EXPECT_NE(seen[1].find("accepted (chosen)"), std::string::npos) << seen[1];
}

// --- the FP8 mode table with fakes -----------------------------------------------------------

class Fp8ModeTest : public ::testing::Test {
 protected:
  FakeKernel w8a8{"fake.native.w8a8", Family::kNative, fp8_mode_only(Fp8Mode::kW8A8)};
  FakeKernel w8a16{"fake.blas.w8a16", Family::kBlas, fp8_mode_only(Fp8Mode::kW8A16)};
  FakeKernel reference{
      "fake.reference.any", Family::kReference, [](const LinearProblem& p, const Device&) {
        return p.fp8_mode == Fp8Mode::kNone ? Verdict::reject(Reason::kFp8Mode, "undecided")
                                            : Verdict::accept();
      }};
  std::vector<const LinearKernel*> kernels{&w8a8, &w8a16, &reference};

  SelectionPolicy policy(const char* backend, const char* disabled = "") {
    auto p = make_policy(backend, "", disabled, kernels);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? *p : SelectionPolicy{};
  }
  Fp8Mode mode(const LinearProblem& p, const char* target, const SelectionPolicy& pol) {
    return decide_fp8_mode(p, device_of(target), pol, kernels).mode;
  }
};

TEST_F(Fp8ModeTest, WeightOnlyCheckpointsAreW8A16Everywhere) {
  const LinearProblem p = fp8_problem(ActQuant::kNone);
  for (const char* target : {"cpu:avx512", "cuda:sm90", "opencl:intel-gpu"}) {
    for (const char* backend : {"auto", "native", "blas", "reference"}) {
      EXPECT_EQ(mode(p, target, policy(backend)), Fp8Mode::kW8A16) << target << " " << backend;
    }
  }
}

TEST_F(Fp8ModeTest, NonFp8ProblemsHaveNoMode) {
  EXPECT_EQ(mode(int4_problem(), "cpu:avx2", policy("auto")), Fp8Mode::kNone);
}

TEST_F(Fp8ModeTest, CpuAndCudaRunW8A8WhenAnAllowedKernelCan) {
  const LinearProblem p = fp8_problem(ActQuant::kDynamicToken);
  for (const char* target : {"cpu:avx2", "cuda:sm90"}) {
    EXPECT_EQ(mode(p, target, policy("auto")), Fp8Mode::kW8A8) << target;
    EXPECT_EQ(mode(p, target, policy("native")), Fp8Mode::kW8A8) << target;
    // The only native W8A8 kernel disabled or filtered out: W8A16 through the blas kernel.
    EXPECT_EQ(mode(p, target, policy("auto", "fake.native.w8a8")), Fp8Mode::kW8A16) << target;
    EXPECT_EQ(mode(p, target, policy("blas")), Fp8Mode::kW8A16) << target;
    // Reference alone: it decides, and runs the checkpoint's W8A8 numerics.
    EXPECT_EQ(mode(p, target, policy("reference")), Fp8Mode::kW8A8) << target;
  }
}

TEST_F(Fp8ModeTest, ReferenceW8A8DoesNotOutvoteAFasterW8A16Kernel) {
  const LinearProblem p = fp8_problem(ActQuant::kDynamicToken);
  const Fp8ModeDecision d =
      decide_fp8_mode(p, device_of("cpu:avx2"), policy("auto", "fake.native.w8a8"), kernels);
  EXPECT_EQ(d.mode, Fp8Mode::kW8A16);
  EXPECT_NE(d.reason.find("fake.blas.w8a16"), std::string::npos) << d.reason;
}

TEST_F(Fp8ModeTest, OpenClDefaultsToW8A16AndNativeOrBlasForceW8A8) {
  const LinearProblem p = fp8_problem(ActQuant::kDynamicToken);
  EXPECT_EQ(mode(p, "opencl:intel-gpu", policy("auto")), Fp8Mode::kW8A16);
  EXPECT_EQ(mode(p, "xpu", policy("reference")), Fp8Mode::kW8A16);
  EXPECT_EQ(mode(p, "opencl:intel-gpu", policy("native")), Fp8Mode::kW8A8);
  // Forced even when no blas kernel runs W8A8: strict, the selection then fails loudly.
  EXPECT_EQ(mode(p, "opencl:intel-gpu", policy("blas")), Fp8Mode::kW8A8);
  auto s = select_from(kernels, p, device_of("opencl:intel-gpu"), policy("blas"), "layer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kNoKernel);
  EXPECT_NE(s.status().message().find("fake.blas.w8a16: fp8-mode"), std::string::npos);
  EXPECT_NE(s.status().message().find("forces W8A8"), std::string::npos) << s.status().message();
}

TEST_F(Fp8ModeTest, DecidedProblemsKeepTheirMode) {
  LinearProblem p = fp8_problem(ActQuant::kDynamicToken);
  p.fp8_mode = Fp8Mode::kW8A16;
  EXPECT_EQ(mode(p, "cpu:avx2", policy("auto")), Fp8Mode::kW8A16);
}

// --- the real registry on simulated devices -------------------------------------------------

std::vector<std::string> names_of(const std::vector<const LinearKernel*>& kernels) {
  std::vector<std::string> names;
  for (const LinearKernel* k : kernels) names.emplace_back(k->name());
  return names;
}

TEST(RegistryTest, ListsAreBackendThenReferenceAndNamesAreUnique) {
  const auto reference = reference_kernels();
  ASSERT_FALSE(reference.empty());
  for (Platform platform : {Platform::kCpu, Platform::kCuda, Platform::kOpenCl}) {
    const auto list = kernels_for(platform);
    std::vector<const LinearKernel*> expected = platform == Platform::kCpu    ? cpu_kernels()
                                                : platform == Platform::kCuda ? cuda_kernels()
                                                                              : opencl_kernels();
    expected.insert(expected.end(), reference.begin(), reference.end());
    EXPECT_EQ(list, expected);
  }
  const auto all = all_kernels();
  std::vector<std::string> names = names_of(all);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const LinearKernel* k : all) {
    EXPECT_EQ(find_kernel(k->name()), k);
    // <backend>.<scheme>.<algo>[.<isa>]
    EXPECT_GE(std::count(k->name().begin(), k->name().end(), '.'), 2) << k->name();
  }
  for (const LinearKernel* k : reference) EXPECT_EQ(k->family(), Family::kReference);
  EXPECT_EQ(find_kernel("no.such.kernel"), nullptr);
}

// A DeviceContext for a device this machine does not have: nothing is ever uploaded to it.
class FakeContext final : public DeviceContext {
 public:
  explicit FakeContext(Device device) : device_(std::move(device)) {}
  const Device& device() const override { return device_; }
  const Allocator& allocator() const override { return host_allocator(); }
  const Allocator& staging_allocator() const override { return host_allocator(); }
  Status upload(void*, std::size_t, const void*, std::size_t) override { return refuse(); }
  Status download(void*, const void*, std::size_t, std::size_t) override { return refuse(); }
  Status fill(void*, std::size_t, uint32_t, std::size_t) override { return refuse(); }
  void* default_stream() const override { return nullptr; }
  Status synchronize(void*) override { return refuse(); }

 private:
  static Status refuse() { return Status(ErrorCode::kInternal, "fake context"); }
  Device device_;
};

TEST(RegistryTest, UnbuiltBackendsAnswerNotCompiledOnRealDevices) {
  Device cuda;  // what a real CUDA device would look like to this binary
  cuda.platform = Platform::kCuda;
  cuda.sm = 90;
  Device opencl;
  opencl.platform = Platform::kOpenCl;
  opencl.intel_gpu = opencl.is_gpu = opencl.fp16 = true;
  opencl.subgroup_sizes = {16};
  const LinearProblem p = int4_problem();
  // Without the backend every entry is not-compiled; with it (a CUDA / OpenCL build) only the
  // planned entries that have no device code yet are.
  auto honest = [](const Verdict& v, bool compiled) {
    if (!compiled) return v.reason == Reason::kNotCompiled;
    return v.reason != Reason::kNotCompiled || v.detail.find("(planned)") != std::string::npos;
  };
  for (const LinearKernel* k : cuda_kernels()) {
    const Verdict v = k->check(p, cuda);
    EXPECT_TRUE(honest(v, cuda_backend_compiled())) << k->name() << ": " << v.detail;
    EXPECT_EQ(k->check(p, opencl).reason, Reason::kWrongPlatform) << k->name();
  }
  for (const LinearKernel* k : opencl_kernels()) {
    const Verdict v = k->check(p, opencl);
    EXPECT_TRUE(honest(v, opencl_backend_compiled())) << k->name() << ": " << v.detail;
    EXPECT_EQ(k->check(p, cuda).reason, Reason::kWrongPlatform) << k->name();
  }
  // prepare() refuses honestly: no backend in this binary, or no device code for the entry.
  Canonical weights;
  weights.name = "layer";
  FakeContext context(cuda);
  auto prepared = find_kernel("cuda.int.blas.cublaslt")->prepare(weights, p, context);
  ASSERT_FALSE(prepared.ok());
  if (!cuda_backend_compiled()) {
    EXPECT_EQ(prepared.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(prepared.status().message().find("QLINEAR_WITH_CUDA"), std::string::npos)
        << prepared.status().message();
  }
}

struct TableCase {
  const char* target;
  LinearProblem problem;
  const char* backend;
  const char* kernel;
  const char* disabled;
  const char* chosen;  // "" when nothing fits
  Fp8Mode mode;
  std::vector<std::string> verdicts;
};

void run_case(const TableCase& c) {
  const Device device = device_of(c.target);
  const SelectionPolicy policy = policy_of(c.backend, c.kernel, c.disabled);
  const Selection s =
      evaluate_kernels(kernels_for(device.platform), c.problem, device, policy, "layer");
  const std::string where = fmt::format("{} {} backend={} kernel={} disabled={}", c.target,
                                        c.problem.to_string(), c.backend, c.kernel, c.disabled);
  EXPECT_EQ(s.kernel == nullptr ? "" : std::string(s.kernel->name()), c.chosen) << where;
  EXPECT_EQ(s.problem.fp8_mode, c.mode) << where;
  EXPECT_EQ(verdict_table(s), c.verdicts) << where;
  auto selected = select_kernel(c.problem, device, policy, "layer");
  EXPECT_EQ(selected.ok(), std::string(c.chosen) != "") << where;
  if (!selected.ok()) {
    EXPECT_EQ(selected.status().code(), ErrorCode::kNoKernel) << where;
  }
}

// Decode (M <= 8 or 16) and prefill (M >= 33) problems: the CUDA gemv / mma kernels serve the
// first.
LinearProblem rows(LinearProblem p, int64_t m_min, int64_t m_max) {
  p.m_min = m_min;
  p.m_max = m_max;
  return p;
}

TEST(RegistryTest, CudaTable) {
  LinearProblem g32_zp8 = int4_problem();
  g32_zp8.bits = 8;
  g32_zp8.has_zeros = true;
  g32_zp8.group_size = 32;
  LinearProblem ao_split = int4_problem(2048, 4096);  // row-parallel, K split 2 ways
  ao_split.act_order = true;
  ao_split.tp = 2;
  ao_split.full_K = 4096;
  const LinearProblem decode = rows(int4_problem(), 1, 8);
  const LinearProblem prefill = rows(int4_problem(), 33, 4096);
  const LinearProblem fp8_token = fp8_problem(ActQuant::kDynamicToken);
  const LinearProblem fp8_block =
      fp8_problem(ActQuant::kDynamicGroup, Fp8WeightGranularity::kBlock);
  const TableCase cases[] = {
      {"cuda:sm90",
       decode,
       "auto",
       "",
       "",
       "cuda.int.gemv.sm80",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=ok", "cuda.int.mma.sm80=ok", "cuda.fp8.w8a16.mma.sm80=scheme",
        "cuda.fp8.cublaslt.sm89=scheme", "cuda.int.blas.cublaslt=ok",
        "cuda.fp8.blas.cublaslt=scheme", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=m-range", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // Prefill: the mma kernel's M range ends at 32; the dequantized cuBLASLt GEMM takes it.
      {"cuda:sm90",
       prefill,
       "auto",
       "",
       "",
       "cuda.int.blas.cublaslt",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=m-range", "cuda.int.mma.sm80=m-range", "cuda.fp8.w8a16.mma.sm80=scheme",
        "cuda.fp8.cublaslt.sm89=scheme", "cuda.int.blas.cublaslt=ok",
        "cuda.fp8.blas.cublaslt=scheme", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=ok", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // int8 with zero points and group 32 over M 1-16: the gemv kernel serves M <= 8 only.
      {"cuda:sm80",
       rows(g32_zp8, 1, 16),
       "auto",
       "",
       "",
       "cuda.int.mma.sm80",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=m-range", "cuda.int.mma.sm80=ok", "cuda.fp8.w8a16.mma.sm80=scheme",
        "cuda.fp8.cublaslt.sm89=capability", "cuda.int.blas.cublaslt=ok",
        "cuda.fp8.blas.cublaslt=scheme", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=capability", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // Act-order with K split: the mma kernel sorts K by group and needs all of it.
      {"cuda:sm90",
       rows(ao_split, 1, 16),
       "auto",
       "",
       "",
       "cuda.int.blas.cublaslt",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=act-order", "cuda.int.mma.sm80=act-order",
        "cuda.fp8.w8a16.mma.sm80=scheme", "cuda.fp8.cublaslt.sm89=scheme",
        "cuda.int.blas.cublaslt=ok", "cuda.fp8.blas.cublaslt=scheme",
        "cuda.dense.blas.cublaslt=scheme", "cuda.int.wgmma.sm90=m-range",
        "reference.int.scalar=wrong-platform", "reference.fp8.scalar=wrong-platform",
        "reference.dense.scalar=wrong-platform"}},
      // Nothing fits: no kernel on sm75 and the filter removes the rest.
      {"cuda:sm75",
       decode,
       "native",
       "",
       "",
       "",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=capability", "cuda.int.mma.sm80=capability",
        "cuda.fp8.w8a16.mma.sm80=capability", "cuda.fp8.cublaslt.sm89=capability",
        "cuda.int.blas.cublaslt=backend-filter", "cuda.fp8.blas.cublaslt=backend-filter",
        "cuda.dense.blas.cublaslt=backend-filter", "cuda.int.wgmma.sm90=capability",
        "reference.int.scalar=backend-filter", "reference.fp8.scalar=backend-filter",
        "reference.dense.scalar=backend-filter"}},
      // Disabled kernels fall through in order.
      {"cuda:sm90",
       decode,
       "auto",
       "",
       "cuda.int.gemv.sm80,cuda.int.mma.sm80",
       "cuda.int.blas.cublaslt",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=disabled-by-user", "cuda.int.mma.sm80=disabled-by-user",
        "cuda.fp8.w8a16.mma.sm80=scheme", "cuda.fp8.cublaslt.sm89=scheme",
        "cuda.int.blas.cublaslt=ok", "cuda.fp8.blas.cublaslt=scheme",
        "cuda.dense.blas.cublaslt=scheme", "cuda.int.wgmma.sm90=m-range",
        "reference.int.scalar=wrong-platform", "reference.fp8.scalar=wrong-platform",
        "reference.dense.scalar=wrong-platform"}},
      // FP8 W8A8 checkpoint, prefill: cuBLASLt FP8 on sm90 ...
      {"cuda:sm90",
       rows(fp8_token, 33, 4096),
       "auto",
       "",
       "",
       "cuda.fp8.cublaslt.sm89",
       Fp8Mode::kW8A8,
       {"cuda.int.gemv.sm80=scheme", "cuda.int.mma.sm80=scheme", "cuda.fp8.w8a16.mma.sm80=fp8-mode",
        "cuda.fp8.cublaslt.sm89=ok", "cuda.int.blas.cublaslt=scheme",
        "cuda.fp8.blas.cublaslt=fp8-mode", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=scheme", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // ... decode: W8A16 on the mma kernel (the W8A8 kernel serves M >= 17) ...
      {"cuda:sm90",
       rows(fp8_token, 1, 16),
       "auto",
       "",
       "",
       "cuda.fp8.w8a16.mma.sm80",
       Fp8Mode::kW8A16,
       {"cuda.int.gemv.sm80=scheme", "cuda.int.mma.sm80=scheme", "cuda.fp8.w8a16.mma.sm80=ok",
        "cuda.fp8.cublaslt.sm89=fp8-mode", "cuda.int.blas.cublaslt=scheme",
        "cuda.fp8.blas.cublaslt=ok", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=scheme", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // ... and on sm80 (no FP8 tensor cores) prefill is W8A16 through the dequantized GEMM.
      {"cuda:sm80",
       rows(fp8_token, 33, 4096),
       "auto",
       "",
       "",
       "cuda.fp8.blas.cublaslt",
       Fp8Mode::kW8A16,
       {"cuda.int.gemv.sm80=scheme", "cuda.int.mma.sm80=scheme", "cuda.fp8.w8a16.mma.sm80=m-range",
        "cuda.fp8.cublaslt.sm89=capability", "cuda.int.blas.cublaslt=scheme",
        "cuda.fp8.blas.cublaslt=ok", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=capability", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // DeepSeek-style blocks: cuBLASLt's 128x128 x 1x128 block scaling on sm90.
      {"cuda:sm90",
       rows(fp8_block, 33, 4096),
       "auto",
       "",
       "",
       "cuda.fp8.cublaslt.sm89",
       Fp8Mode::kW8A8,
       {"cuda.int.gemv.sm80=scheme", "cuda.int.mma.sm80=scheme", "cuda.fp8.w8a16.mma.sm80=fp8-mode",
        "cuda.fp8.cublaslt.sm89=ok", "cuda.int.blas.cublaslt=scheme",
        "cuda.fp8.blas.cublaslt=fp8-mode", "cuda.dense.blas.cublaslt=scheme",
        "cuda.int.wgmma.sm90=scheme", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // --kernel naming a kernel that rejects: nothing fits, no silent fallback.
      {"cuda:sm80",
       decode,
       "auto",
       "cuda.fp8.cublaslt.sm89",
       "",
       "",
       Fp8Mode::kNone,
       {"cuda.int.gemv.sm80=not-requested", "cuda.int.mma.sm80=not-requested",
        "cuda.fp8.w8a16.mma.sm80=not-requested", "cuda.fp8.cublaslt.sm89=capability",
        "cuda.int.blas.cublaslt=not-requested", "cuda.fp8.blas.cublaslt=not-requested",
        "cuda.dense.blas.cublaslt=not-requested", "cuda.int.wgmma.sm90=not-requested",
        "reference.int.scalar=not-requested", "reference.fp8.scalar=not-requested",
        "reference.dense.scalar=not-requested"}},
  };
  for (const TableCase& c : cases) run_case(c);
}

TEST(RegistryTest, OpenClTable) {
  // Registry order (src/kernels/opencl/list.cc): the Intel kernels first, the portable ones
  // next, CLBlast last.
  const LinearProblem fp8 = fp8_problem(ActQuant::kDynamicToken);
  const TableCase cases[] = {
      {"opencl:intel-gpu",
       int4_problem(),
       "auto",
       "",
       "",
       "opencl.int.subgroup.intel",
       Fp8Mode::kNone,
       {"opencl.int.subgroup.intel=ok", "opencl.int.gemm.portable=ok",
        "opencl.fp8.w8a16.subgroup.intel=scheme", "opencl.fp8.w8a8.dpas.intel=scheme",
        "opencl.fp8.w8a16.portable=scheme", "opencl.fp8.w8a8.portable=scheme",
        "opencl.blas.clblast=ok", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // The OpenCL default for a W8A8 checkpoint is W8A16 ...
      {"opencl:intel-gpu",
       fp8,
       "auto",
       "",
       "",
       "opencl.fp8.w8a16.subgroup.intel",
       Fp8Mode::kW8A16,
       {"opencl.int.subgroup.intel=scheme", "opencl.int.gemm.portable=scheme",
        "opencl.fp8.w8a16.subgroup.intel=ok", "opencl.fp8.w8a8.dpas.intel=fp8-mode",
        "opencl.fp8.w8a16.portable=ok", "opencl.fp8.w8a8.portable=fp8-mode",
        "opencl.blas.clblast=ok", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // ... and an explicit native or blas backend forces W8A8 (vLLM PR #49664).
      {"xpu",
       fp8,
       "native",
       "",
       "",
       "opencl.fp8.w8a8.dpas.intel",
       Fp8Mode::kW8A8,
       {"opencl.int.subgroup.intel=scheme", "opencl.int.gemm.portable=scheme",
        "opencl.fp8.w8a16.subgroup.intel=fp8-mode", "opencl.fp8.w8a8.dpas.intel=ok",
        "opencl.fp8.w8a16.portable=fp8-mode", "opencl.fp8.w8a8.portable=ok",
        "opencl.blas.clblast=backend-filter", "reference.int.scalar=backend-filter",
        "reference.fp8.scalar=backend-filter", "reference.dense.scalar=backend-filter"}},
      {"opencl:intel-gpu",
       fp8,
       "blas",
       "",
       "",
       "opencl.blas.clblast",
       Fp8Mode::kW8A8,
       {"opencl.int.subgroup.intel=backend-filter", "opencl.int.gemm.portable=backend-filter",
        "opencl.fp8.w8a16.subgroup.intel=backend-filter",
        "opencl.fp8.w8a8.dpas.intel=backend-filter", "opencl.fp8.w8a16.portable=backend-filter",
        "opencl.fp8.w8a8.portable=backend-filter", "opencl.blas.clblast=ok",
        "reference.int.scalar=backend-filter", "reference.fp8.scalar=backend-filter",
        "reference.dense.scalar=backend-filter"}},
      // pocl: no Intel GPU kernel (capability); the portable kernel takes it before CLBlast.
      {"opencl:pocl",
       int4_problem(),
       "auto",
       "",
       "",
       "opencl.int.gemm.portable",
       Fp8Mode::kNone,
       {"opencl.int.subgroup.intel=capability", "opencl.int.gemm.portable=ok",
        "opencl.fp8.w8a16.subgroup.intel=capability", "opencl.fp8.w8a8.dpas.intel=capability",
        "opencl.fp8.w8a16.portable=scheme", "opencl.fp8.w8a8.portable=scheme",
        "opencl.blas.clblast=ok", "reference.int.scalar=wrong-platform",
        "reference.fp8.scalar=wrong-platform", "reference.dense.scalar=wrong-platform"}},
      // With the portable kernel disabled, native alone has nothing on pocl.
      {"opencl:pocl",
       int4_problem(),
       "native",
       "",
       "opencl.int.gemm.portable",
       "",
       Fp8Mode::kNone,
       {"opencl.int.subgroup.intel=capability", "opencl.int.gemm.portable=disabled-by-user",
        "opencl.fp8.w8a16.subgroup.intel=capability", "opencl.fp8.w8a8.dpas.intel=capability",
        "opencl.fp8.w8a16.portable=scheme", "opencl.fp8.w8a8.portable=scheme",
        "opencl.blas.clblast=backend-filter", "reference.int.scalar=backend-filter",
        "reference.fp8.scalar=backend-filter", "reference.dense.scalar=backend-filter"}},
  };
  for (const TableCase& c : cases) run_case(c);
}

TEST(RegistryTest, CpuRequestedKernelThatRejectsFailsWithEveryVerdict) {
  const Device device = device_of("cpu:generic");
  const SelectionPolicy policy = policy_of("auto", "reference.dense.scalar");
  const Selection s =
      evaluate_kernels(kernels_for(Platform::kCpu), int4_problem(), device, policy, "layer");
  EXPECT_EQ(s.kernel, nullptr);
  std::vector<std::string> expected;
  for (const LinearKernel* k : kernels_for(Platform::kCpu)) {
    expected.push_back(fmt::format(
        "{}={}", k->name(), k->name() == "reference.dense.scalar" ? "scheme" : "not-requested"));
  }
  EXPECT_EQ(verdict_table(s), expected);
  auto selected = select_kernel(int4_problem(), device, policy, "model.layers.0.mlp.down_proj");
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), ErrorCode::kNoKernel);
  EXPECT_NE(selected.status().message().find("reference.dense.scalar: scheme"), std::string::npos);
}

TEST(RegistryTest, CpuReferenceBackendPicksTheReferenceKernel) {
  const Device device = device_of("cpu:generic");
  auto s = select_kernel(int4_problem(), device, policy_of("reference"), "layer");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->kernel->name(), "reference.int.scalar");
  for (const Candidate& c : s->candidates) {
    if (c.kernel->family() != Family::kReference) {
      EXPECT_EQ(c.verdict.reason, Reason::kBackendFilter) << c.kernel->name();
    }
  }
}

TEST(RegistryTest, CpuFp8Modes) {
  const Device device = device_of("cpu:avx512");
  // A checkpoint with quantized activations runs W8A8 when a non-reference CPU kernel can.
  auto w8a8 = select_kernel(fp8_problem(ActQuant::kDynamicToken), device, policy_of("auto"), "l");
  ASSERT_TRUE(w8a8.ok()) << w8a8.status().to_string();
  bool non_reference_w8a8 = false;
  for (const LinearKernel* k : cpu_kernels()) {
    LinearProblem p = fp8_problem(ActQuant::kDynamicToken);
    p.fp8_mode = Fp8Mode::kW8A8;
    non_reference_w8a8 = non_reference_w8a8 || k->check(p, device).ok();
  }
  EXPECT_EQ(w8a8->problem.fp8_mode, non_reference_w8a8 ? Fp8Mode::kW8A8 : Fp8Mode::kW8A16);
  EXPECT_NE(w8a8->kernel->family(), Family::kReference);
  // Weight-only checkpoints always run W8A16.
  auto w8a16 = select_kernel(fp8_problem(ActQuant::kNone), device, policy_of("auto"), "l");
  ASSERT_TRUE(w8a16.ok()) << w8a16.status().to_string();
  EXPECT_EQ(w8a16->problem.fp8_mode, Fp8Mode::kW8A16);
  EXPECT_EQ(w8a16->mode_reason, "the checkpoint does not quantize activations");
}

TEST(RegistryTest, RealPolicyValidatesAgainstTheRegistry) {
  EXPECT_TRUE(make_policy("auto", "cuda.int.mma.sm80", "").ok());
  auto unknown = make_policy("auto", "", "cpu.w4a16.avx9000");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("reference.int.scalar"), std::string::npos);
}

}  // namespace
}  // namespace qlinear
