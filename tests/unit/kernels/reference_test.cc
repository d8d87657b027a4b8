// The reference kernels (the oracle) against small cases worked out by hand, and the checks and
// validation every reference kernel performs. The same hand cases also run through every other
// registered kernel that accepts them on this CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "qlinear/dtype.h"
#include "support/kernel_run.h"

namespace qlinear {

const LinearKernel& kernel_reference_int();
const LinearKernel& kernel_reference_fp8();
const LinearKernel& kernel_reference_dense();

namespace {

Device cpu_device() {
  Device device;
  device.platform = Platform::kCpu;
  device.name = "cpu (test)";
  return device;
}

// Packs codes [K][N] into the canonical GPTQ order: word (r, n) holds rows r*pf .. r*pf+pf-1,
// row r*pf+i at bit offset bits*i.
std::vector<uint32_t> pack_gptq(const std::vector<std::vector<uint32_t>>& codes, int bits) {
  const std::size_t K = codes.size();
  const std::size_t N = codes[0].size();
  const std::size_t pf = 32 / static_cast<std::size_t>(bits);
  std::vector<uint32_t> words(K / pf * N, 0);
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t n = 0; n < N; ++n) words[(k / pf) * N + n] |= codes[k][n] << (bits * (k % pf));
  }
  return words;
}

Tensor f32_tensor(const std::vector<float>& values, int64_t rows, int64_t cols) {
  Tensor t = test::host_tensor(DType::kF32, {rows, cols});
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

// Prepares and runs `kernel` on `weights` for `x`; returns y as a flat vector.
// (The problem takes x's dtype: a prepared kernel runs the activation dtype it was chosen for.)
std::vector<float> run_kernel(const LinearKernel& kernel, const Canonical& weights,
                              const LinearProblem& problem_in, const Tensor& x) {
  LinearProblem problem = problem_in;
  problem.act_dtype = x.dtype();
  const Device device = cpu_device();
  const Verdict verdict = kernel.check(problem, device);
  EXPECT_TRUE(verdict.ok()) << kernel.name() << ": " << verdict.to_string();
  auto prepared = test::prepare_on_cpu(kernel, weights, problem);
  EXPECT_TRUE(prepared.ok()) << prepared.status().to_string();
  if (!prepared.ok()) return {};
  Result<Tensor> y = test::run_on_cpu(**prepared, x);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  if (!y.ok()) return {};
  return test::as_floats(*y);
}

// Runs the case through `reference` (exact expectation) and every other registered kernel that
// accepts it on this CPU (float32 sums: a relative tolerance).
void expect_all_kernels(const LinearKernel& reference, const Canonical& weights,
                        const LinearProblem& problem, const Tensor& x,
                        const std::vector<float>& expected) {
  const std::vector<float> y = run_kernel(reference, weights, problem, x);
  ASSERT_EQ(y.size(), expected.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_DOUBLE_EQ(y[i], expected[i]) << reference.name() << " y[" << i << "]";
  }
  for (const LinearKernel* kernel : all_kernels()) {
    if (kernel == &reference || !kernel->check(problem, cpu_device()).ok()) continue;
    const std::vector<float> other = run_kernel(*kernel, weights, problem, x);
    ASSERT_EQ(other.size(), expected.size()) << kernel->name();
    for (std::size_t i = 0; i < other.size(); ++i) {
      EXPECT_NEAR(other[i], expected[i], 1e-5 * (1.0 + std::fabs(expected[i])))
          << kernel->name() << " y[" << i << "]";
    }
  }
}

// K = 8, N = 3, 4-bit, group 4, asymmetric. W[k][n] = (q - z[g][n]) * s[g][n], g = k / 4:
//   n0: 0.5 0 1 -0.5 | 0 0 8 -8      n1: 0 1 2 3 | 0 0.5 1 1.5      n2: 1.75 -0.25 0 0 | -1 0 1 2
Canonical hand_int_2x3() {
  IntWeights w;
  w.bits = 4;
  w.K = 8;
  w.N = 3;
  w.group_size = 4;
  w.num_groups = 2;
  w.qweight = pack_gptq({{9, 0, 15},
                         {8, 1, 7},
                         {10, 2, 8},
                         {7, 3, 8},  //
                         {8, 4, 0},
                         {8, 5, 1},
                         {12, 6, 2},
                         {4, 7, 3}},
                        4);
  w.scales = {0.5f, 1.0f, 0.25f, 2.0f, 0.5f, 1.0f};
  w.zeros = {8, 0, 8, 8, 4, 1};
  w.bias = {1.0f, -1.0f, 0.5f};
  Canonical c;
  c.name = "hand.int";
  c.weights = w;
  c.shard_sizes = {3};
  return c;
}

TEST(ReferenceInt, TwoByThreeByHand) {
  const Canonical weights = hand_int_2x3();
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  const Tensor x = f32_tensor({1, 2, 3, 4, 5, 6, 7, 8, 1, -1, 1, -1, 1, -1, 1, -1}, 2, 8);
  // x0 . n0 = 0.5 + 3 - 2 + 56 - 64 = -6.5, + bias 1 = -5.5;  x0 . n1 = 42 - 1 = 41;
  // x0 . n2 = 1.75 - 0.5 - 5 + 7 + 16 = 19.25 + 0.5;  x1 . n0 = 18 + 1;  x1 . n1 = -3 - 1;
  // x1 . n2 = 1.75 + 0.25 - 1 + 1 - 2 = 0, + 0.5.
  expect_all_kernels(kernel_reference_int(), weights, problem, x,
                     {-5.5f, 41.0f, 19.75f, 19.0f, -4.0f, 0.5f});
}

TEST(ReferenceInt, TwoByThreeWithBf16Activations) {
  const Canonical weights = hand_int_2x3();
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kBF16;
  Tensor x = test::host_tensor(DType::kBF16, {2, 8});
  const float values[16] = {1, 2, 3, 4, 5, 6, 7, 8, 1, -1, 1, -1, 1, -1, 1, -1};
  for (int i = 0; i < 16; ++i) x.data_as<uint16_t>()[i] = f32_to_bf16(values[i]);
  expect_all_kernels(kernel_reference_int(), weights, problem, x,
                     {-5.5f, 41.0f, 19.75f, 19.0f, -4.0f, 0.5f});
}

TEST(ReferenceInt, ActOrderUsesGIdxNotKOverGroup) {
  // K = 8, N = 1, symmetric 4-bit (zero 8), group 4, g_idx = 1 0 1 0 0 1 1 0, scales g0 = 1,
  // g1 = 10. q - 8 = 1 2 0 -1 1 0 4 0, so W = 10 2 0 -1 1 0 40 0 and with x = 1..8:
  // y = 10 + 4 + 0 - 4 + 5 + 0 + 280 + 0 = 295 (k / 4 grouping would give 331).
  IntWeights w;
  w.bits = 4;
  w.K = 8;
  w.N = 1;
  w.group_size = 4;
  w.num_groups = 2;
  w.qweight = pack_gptq({{9}, {10}, {8}, {7}, {9}, {8}, {12}, {8}}, 4);
  w.scales = {1.0f, 10.0f};
  w.g_idx = {1, 0, 1, 0, 0, 1, 1, 0};
  Canonical weights;
  weights.name = "hand.act_order";
  weights.weights = w;
  weights.shard_sizes = {1};
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  ASSERT_TRUE(problem.act_order);
  expect_all_kernels(kernel_reference_int(), weights, problem,
                     f32_tensor({1, 2, 3, 4, 5, 6, 7, 8}, 1, 8), {295.0f});
}

TEST(ReferenceInt, TwoAndEightBitSymmetric) {
  // 2-bit: K = 16 (one word per column), zero 2, channelwise scale 0.5; codes 0 1 2 3 repeated
  // give W = -1 -0.5 0 0.5 (four times); x = all ones: 4 * (-1) = -4.
  {
    std::vector<std::vector<uint32_t>> codes;
    for (int k = 0; k < 16; ++k) codes.push_back({static_cast<uint32_t>(k % 4)});
    IntWeights w;
    w.bits = 2;
    w.K = 16;
    w.N = 1;
    w.group_size = 16;
    w.num_groups = 1;
    w.qweight = pack_gptq(codes, 2);
    w.scales = {0.5f};
    Canonical weights;
    weights.weights = w;
    LinearProblem problem = LinearProblem::from_canonical(weights);
    problem.act_dtype = DType::kF32;
    expect_all_kernels(kernel_reference_int(), weights, problem,
                       f32_tensor(std::vector<float>(16, 1.0f), 1, 16), {-4.0f});
  }
  // 8-bit: K = 4, zero 128; codes 0, 255, 128, 130 -> -128 127 0 2, scale 0.25; x = 1 1 1 1:
  // (-128 + 127 + 0 + 2) * 0.25 = 0.25.
  {
    IntWeights w;
    w.bits = 8;
    w.K = 4;
    w.N = 1;
    w.group_size = 4;
    w.num_groups = 1;
    w.qweight = pack_gptq({{0}, {255}, {128}, {130}}, 8);
    w.scales = {0.25f};
    Canonical weights;
    weights.weights = w;
    LinearProblem problem = LinearProblem::from_canonical(weights);
    problem.act_dtype = DType::kF32;
    expect_all_kernels(kernel_reference_int(), weights, problem, f32_tensor({1, 1, 1, 1}, 1, 4),
                       {0.25f});
  }
}

// K = 4, N = 2, per-channel FP8 weights. Codes (e4m3fn): 1.0 = 0x38, 2.0 = 0x40, -1.0 = 0xB8,
// 0.5 = 0x30, 0.25 = 0x28, 4.0 = 0x48, -2.0 = 0xC0.
Canonical hand_fp8(ActQuant act) {
  Fp8Weights w;
  w.K = 4;
  w.N = 2;
  w.qweight = {0x38, 0x40, 0xB8, 0x30,   // W_q row 0: 1 2 -1 0.5
               0x28, 0x00, 0x48, 0xC0};  // W_q row 1: 0.25 0 4 -2
  w.granularity = Fp8WeightGranularity::kChannel;
  w.scale = {0.5f, 3.0f};
  w.activation = act;
  Canonical c;
  c.name = "hand.fp8";
  c.weights = w;
  c.shard_sizes = {2};
  return c;
}

TEST(ReferenceFp8, W8A8PerTokenByHand) {
  const Canonical weights = hand_fp8(ActQuant::kDynamicToken);
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  problem.fp8_mode = Fp8Mode::kW8A8;
  // Row 0: absmax 896 -> s_a = 2, a_q = 448 1.5 -1.5 0.
  //   y00 = 2*0.5*(448 + 3 + 1.5) = 452.5;  y01 = 2*3*(112 - 6) = 636.
  // Row 1: absmax 1.75 -> s_a = 1/256, a_q = 224 -112 26 448 (0.1*256 = 25.6 -> 26).
  //   y10 = 0.5/256*(224 - 224 - 26 + 224) = 198/512;  y11 = 3/256*(56 + 104 - 896) = -8.625.
  const Tensor x = f32_tensor({896, 3, -3, 0, 0.875f, -0.4375f, 0.1f, 1.75f}, 2, 4);
  expect_all_kernels(kernel_reference_fp8(), weights, problem, x,
                     {452.5f, 636.0f, 198.0f / 512.0f, -8.625f});
}

TEST(ReferenceFp8, W8A16SameWeightsKeepTheActivations) {
  const Canonical weights = hand_fp8(ActQuant::kDynamicToken);
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  problem.fp8_mode = Fp8Mode::kW8A16;
  // W = 0.5 1 -0.5 0.25 | 0.75 0 12 -6. Row 0 is exact in FP8, so it matches W8A8 (452.5, 636).
  // Row 1: 0.4375 - 0.4375 - 0.05 + 0.4375 = 0.3875 and 0.65625 + 1.2 - 10.5 = -8.64375, where
  // W8A8 differs (it rounded 0.1 to 26/256).
  const Tensor x = f32_tensor({896, 3, -3, 0, 0.875f, -0.4375f, 0.1f, 1.75f}, 2, 4);
  const double y10 = 0.875 * 0.5 - 0.4375 * 1.0 + static_cast<double>(0.1f) * -0.5 + 1.75 * 0.25;
  const double y11 = 0.875 * 0.75 + static_cast<double>(0.1f) * 12.0 - 1.75 * 6.0;
  expect_all_kernels(kernel_reference_fp8(), weights, problem, x,
                     {452.5f, 636.0f, static_cast<float>(y10), static_cast<float>(y11)});
}

TEST(ReferenceFp8, W8A8BlockWeightsRescalePerKBlock) {
  // K = 4, N = 1, block [1, 2]: weight scales 0.5 (k 0-1) and 4 (k 2-3); activation groups of 2.
  // x = 448 1.1 0.5 1.75: group 0 absmax 448 -> s = 1, a_q = 448 1.125 (1.1 rounds up);
  // group 1 absmax 1.75 -> s = 1/256, a_q = 128 448. W_q = 1 2 2 0.5.
  // y = 1*0.5*(448 + 2.25) + (1/256)*4*(256 + 224) = 225.125 + 7.5 = 232.625, + bias 0.375.
  Fp8Weights w;
  w.K = 4;
  w.N = 1;
  w.qweight = {0x38, 0x40, 0x40, 0x30};
  w.granularity = Fp8WeightGranularity::kBlock;
  w.block_n = 1;
  w.block_k = 2;
  w.scale = {0.5f, 4.0f};
  w.activation = ActQuant::kDynamicGroup;
  w.bias = {0.375f};
  Canonical weights;
  weights.name = "hand.fp8.block";
  weights.weights = w;
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  problem.fp8_mode = Fp8Mode::kW8A8;
  expect_all_kernels(kernel_reference_fp8(), weights, problem,
                     f32_tensor({448, 1.1f, 0.5f, 1.75f}, 1, 4), {233.0f});
}

TEST(ReferenceFp8, W8A8StaticScaleSaturates) {
  // input_scale 0.5: x * 2 = 2 4 -2 1000 -> codes 2 4 -2 448 (clamped). Row 0 of W:
  // 0.5 * 0.5 * (2 + 8 + 2 + 224) = 59.
  Canonical weights = hand_fp8(ActQuant::kStaticTensor);
  std::get<Fp8Weights>(weights.weights).input_scale = 0.5f;
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  problem.fp8_mode = Fp8Mode::kW8A8;
  // Row 1 of W: 0.5 * 3 * (0.5 + 0 - 8 - 896) = -1355.25.
  expect_all_kernels(kernel_reference_fp8(), weights, problem, f32_tensor({1, 2, -1, 500}, 1, 4),
                     {59.0f, -1355.25f});
}

TEST(ReferenceDense, Bf16WeightsF16Activations) {
  DenseWeights w;
  w.K = 2;
  w.N = 2;
  w.dtype = DType::kBF16;
  const float values[4] = {1.0f, 2.0f, 3.0f, -0.5f};
  w.data.resize(8);
  for (int i = 0; i < 4; ++i) {
    const uint16_t b = f32_to_bf16(values[i]);
    std::memcpy(w.data.data() + 2 * i, &b, 2);
  }
  w.bias = {0.0f, 0.25f};
  Canonical weights;
  weights.name = "hand.dense";
  weights.weights = w;
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF16;
  Tensor x = test::host_tensor(DType::kF16, {2, 2});
  const float xs[4] = {1.0f, 1.0f, 2.0f, 4.0f};
  for (int i = 0; i < 4; ++i) x.data_as<uint16_t>()[i] = f32_to_f16(xs[i]);
  // y = [1+2, 3-0.5+0.25; 2+8, 6-2+0.25]
  expect_all_kernels(kernel_reference_dense(), weights, problem, x, {3.0f, 2.75f, 10.0f, 4.25f});
}

// Host loops: every CPU (real or simulated) runs them; a GPU device, real or simulated, does
// not (its tensors live on the device), so explain never shows a host fallback there.
TEST(ReferenceKernels, RunOnCpusOnlyAndRejectOtherSchemes) {
  const Canonical weights = hand_int_2x3();
  LinearProblem problem = LinearProblem::from_canonical(weights);
  for (bool simulated : {false, true}) {
    Device device;
    device.platform = Platform::kCpu;
    device.simulated = simulated;
    EXPECT_TRUE(kernel_reference_int().check(problem, device).ok());
    EXPECT_EQ(kernel_reference_fp8().check(problem, device).reason, Reason::kScheme);
    EXPECT_EQ(kernel_reference_dense().check(problem, device).reason, Reason::kScheme);
  }
  for (Platform platform : {Platform::kCuda, Platform::kOpenCl}) {
    for (bool simulated : {false, true}) {
      Device device;
      device.platform = platform;
      device.simulated = simulated;
      for (const LinearKernel* kernel : reference_kernels()) {
        EXPECT_EQ(kernel->check(problem, device).reason, Reason::kWrongPlatform) << kernel->name();
      }
    }
  }
  problem.act_dtype = DType::kF8E4M3;
  EXPECT_EQ(kernel_reference_int().check(problem, cpu_device()).reason, Reason::kDtype);
  problem.act_dtype = DType::kF32;
  problem.bits = 3;
  EXPECT_EQ(kernel_reference_int().check(problem, cpu_device()).reason, Reason::kBits);

  LinearProblem fp8 = LinearProblem::from_canonical(hand_fp8(ActQuant::kNone));
  const Verdict undecided = kernel_reference_fp8().check(fp8, cpu_device());
  EXPECT_EQ(undecided.reason, Reason::kFp8Mode) << undecided.to_string();
}

TEST(ReferenceKernels, PrepareRejectsInconsistentWeights) {
  Canonical weights = hand_int_2x3();
  std::get<IntWeights>(weights.weights).scales.pop_back();
  const LinearProblem problem = LinearProblem::from_canonical(weights);
  auto prepared = test::prepare_on_cpu(kernel_reference_int(), weights, problem);
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.status().message().find("scales has 5 entries; expected num_groups*N = 6"),
            std::string::npos)
      << prepared.status().message();

  Canonical bad_gidx = hand_int_2x3();
  std::get<IntWeights>(bad_gidx.weights).g_idx = {0, 0, 0, 0, 1, 1, 1, 2};
  EXPECT_FALSE(test::prepare_on_cpu(kernel_reference_int(), bad_gidx, problem).ok());

  Canonical fp8 = hand_fp8(ActQuant::kStaticTensor);  // input_scale left 0
  LinearProblem fp8_problem = LinearProblem::from_canonical(fp8);
  fp8_problem.fp8_mode = Fp8Mode::kW8A8;
  EXPECT_FALSE(test::prepare_on_cpu(kernel_reference_fp8(), fp8, fp8_problem).ok());
}

// PreparedLinear::run checks every view before the kernel sees it: columns against K and N, rows
// of x against y, the dtypes the problem was prepared for, and the workspace.
TEST(ReferenceKernels, RunRejectsWrongViews) {
  const Canonical weights = hand_int_2x3();
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  auto prepared = test::prepare_on_cpu(kernel_reference_int(), weights, problem);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const PreparedLinear& p = **prepared;
  Tensor workspace = test::host_tensor(DType::kU8, {static_cast<int64_t>(p.workspace_bytes(3))});
  ExecContext ctx;
  ctx.workspace = {workspace.data(), workspace.nbytes(), Location::host()};
  Tensor x = test::host_tensor(DType::kF32, {2, 7});
  Tensor y = test::host_tensor(DType::kF32, {2, 3});
  const Status bad_x = p.run(x.matrix(), y.matrix(), ctx);
  EXPECT_FALSE(bad_x.ok());
  EXPECT_NE(bad_x.message().find("x has 7 columns; the layer has K=8"), std::string::npos)
      << bad_x.message();
  Tensor x_ok = test::host_tensor(DType::kF32, {2, 8});
  Tensor y_bad = test::host_tensor(DType::kF32, {3, 3});
  const Status bad_rows = p.run(x_ok.matrix(), y_bad.matrix(), ctx);
  EXPECT_NE(bad_rows.message().find("y has 3 rows; x has 2"), std::string::npos)
      << bad_rows.message();
  Tensor x_bf16 = test::host_tensor(DType::kBF16, {2, 8});
  const Status bad_dtype = p.run(x_bf16.matrix(), y.matrix(), ctx);
  EXPECT_NE(bad_dtype.message().find("x is bf16; the layer was prepared for f32"),
            std::string::npos)
      << bad_dtype.message();
  Tensor y_f16 = test::host_tensor(DType::kF16, {2, 3});
  EXPECT_FALSE(p.run(x_ok.matrix(), y_f16.matrix(), ctx).ok());
  // A device location, a short workspace, a leading dimension below the columns.
  MatrixView y_cuda(y.data(), DType::kF32, 2, 3, 3, Location::cuda(0));
  EXPECT_NE(p.run(x_ok.matrix(), y_cuda, ctx).message().find("lives in cuda:0 memory"),
            std::string::npos);
  ExecContext small = ctx;
  small.workspace.bytes = p.workspace_bytes(2) - 1;
  EXPECT_NE(p.run(x_ok.matrix(), y.matrix(), small).message().find("workspace"), std::string::npos);
  ConstMatrixView x_ld(x_ok.data(), DType::kF32, 2, 8, 4);
  EXPECT_NE(p.run(x_ld, y.matrix(), ctx).message().find("leading dimension 4"), std::string::npos);
  EXPECT_TRUE(p.run(x_ok.matrix(), y.matrix(), ctx).ok());
}

// Views with a leading dimension: x rows inside a wider buffer and y columns inside a wider
// output (a slice of a fused QKV output) give exactly the contiguous result, and leave the
// rest of the wide output untouched.
TEST(ReferenceKernels, StridedViewsEqualContiguousOnes) {
  const Canonical weights = hand_int_2x3();
  LinearProblem problem = LinearProblem::from_canonical(weights);
  problem.act_dtype = DType::kF32;
  auto prepared = test::prepare_on_cpu(kernel_reference_int(), weights, problem);
  ASSERT_TRUE(prepared.ok());
  const Tensor x = f32_tensor({1, 2, 3, 4, 5, 6, 7, 8, 1, -1, 1, -1, 1, -1, 1, -1}, 2, 8);
  Result<Tensor> dense = test::run_on_cpu(**prepared, x);
  ASSERT_TRUE(dense.ok());
  std::vector<float> wide_x(2 * 12, 99.0f);  // ld 12
  for (int r = 0; r < 2; ++r) std::memcpy(&wide_x[r * 12], x.data_as<float>() + r * 8, 32);
  std::vector<float> wide_y(2 * 7, -7.0f);  // columns 2..4 of an ld-7 output
  Tensor workspace =
      test::host_tensor(DType::kU8, {static_cast<int64_t>((*prepared)->workspace_bytes(2))});
  ExecContext ctx;
  ctx.workspace = {workspace.data(), workspace.nbytes(), Location::host()};
  const ConstMatrixView xv(wide_x.data(), DType::kF32, 2, 8, 12);
  const MatrixView yv = MatrixView(wide_y.data(), DType::kF32, 2, 7, 7).slice_cols(2, 3);
  ASSERT_TRUE((*prepared)->run(xv, yv, ctx).ok());
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 7; ++c) {
      const float want = c >= 2 && c < 5 ? dense->data_as<float>()[r * 3 + c - 2] : -7.0f;
      EXPECT_EQ(wide_y[r * 7 + c], want) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace qlinear
