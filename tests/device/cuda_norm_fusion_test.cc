// The norm fusion of cuda.int.gemv.sm80 (qlinear/linear.h LinearFusion) against the same layer's
// plain runs and host arithmetic: the add-norm epilogue must leave residual + y (f32 adds of the
// plain y), weight * residual rounded to bf16 and the f64 sums of squares per 16 columns; the RMS
// prologue must give the plain product times each row's inverse RMS. Over M 1-16 (one and two n8
// tiles), a layer whose K slices are reduced through shared memory (few tiles: the first warp
// gathers the tile) and ones with a warp per tile, N not a multiple of 16, and a bias; 8-bit codes,
// whose kernels have no fused form, must say so. CudaSwiGlu: a [gate | up] layer prepared with its
// columns paired (LinearOptions::swiglu_halves) runs plain to the unpaired layer's outputs, and its
// SwiGLU epilogue (with and without the RMS prologue) gives silu(gate) * up of those outputs.
// Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_gpu.h"
#include "kernels/device_context.h"
#include "qlinear/dtype.h"
#include "qlinear/linear.h"
#include "support/int_layer.h"

namespace qlinear {
namespace {

using test::gpu;

// A device matrix filled from host values of its dtype (f32, f64 or bf16 from floats).
struct DeviceMatrix {
  Tensor t;
  int64_t rows = 0, cols = 0;
  DType dtype = DType::kF32;
  MatrixView view() { return MatrixView(t.data(), dtype, rows, cols, cols, t.location()); }
  ConstMatrixView cview() {
    return ConstMatrixView(t.data(), dtype, rows, cols, cols, t.location());
  }
};

DeviceMatrix upload(DType dtype, int64_t rows, int64_t cols, const std::vector<double>& values) {
  DeviceContext& dev = *gpu()->context;
  DeviceMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.dtype = dtype;
  Result<Tensor> t = Tensor::allocate(dtype, {rows, cols}, dev.allocator());
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  m.t = std::move(*t);
  std::vector<std::byte> raw(static_cast<std::size_t>(rows * cols) * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF64) {
      std::memcpy(raw.data() + i * 8, &values[i], 8);
    } else if (dtype == DType::kF32) {
      const auto f = static_cast<float>(values[i]);
      std::memcpy(raw.data() + i * 4, &f, 4);
    } else {
      const uint16_t b = f32_to_bf16(static_cast<float>(values[i]));
      std::memcpy(raw.data() + i * 2, &b, 2);
    }
  }
  EXPECT_TRUE(dev.upload(m.t.data(), 0, raw.data(), raw.size()).ok());
  return m;
}

// The matrix's elements as doubles (bf16 and f32 widened exactly).
std::vector<double> download(DeviceMatrix& m) {
  std::vector<std::byte> raw(static_cast<std::size_t>(m.rows * m.cols) * dtype_size(m.dtype));
  EXPECT_TRUE(gpu()->context->download(raw.data(), m.t.data(), 0, raw.size()).ok());
  std::vector<double> out(static_cast<std::size_t>(m.rows * m.cols));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (m.dtype == DType::kF64) {
      std::memcpy(&out[i], raw.data() + i * 8, 8);
    } else if (m.dtype == DType::kF32) {
      float f;
      std::memcpy(&f, raw.data() + i * 4, 4);
      out[i] = f;
    } else {
      uint16_t b;
      std::memcpy(&b, raw.data() + i * 2, 2);
      out[i] = bf16_to_f32(b);
    }
  }
  return out;
}

std::vector<double> uniform(std::mt19937& rng, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

struct Shape {
  int bits;
  int64_t K, N;
  bool bias;
};

// A random layer of the shape (g128, zero points, f16 scales; a bias in [-1, 1] when asked) whose
// fused shards have the given widths.
Canonical random_layer(std::mt19937& rng, const Shape& s, const std::string& name,
                       std::vector<int64_t> shards) {
  Canonical c;
  c.name = name;
  c.weights = test::random_int_weights(rng, s.bits, s.K, s.N, 128, true, false, false);
  if (s.bias) {
    std::get<IntWeights>(c.weights).bias.resize(static_cast<std::size_t>(s.N));
    for (float& b : std::get<IntWeights>(c.weights).bias)
      b = static_cast<float>(uniform(rng, 1, -1, 1)[0]);
  }
  c.shard_sizes = std::move(shards);
  return c;
}

// bf16 activations, f32 outputs, up to 32 rows (past the gemv's 16).
LinearOptions layer_options() {
  LinearOptions lo;
  lo.act_dtype = DType::kBF16;
  lo.out_dtype = DType::kF32;
  lo.max_rows = 32;
  return lo;
}

class CudaNormFusion : public testing::TestWithParam<Shape> {};

TEST_P(CudaNormFusion, EpilogueAndPrologueMatchThePlainRun) {
  REQUIRE_GPU();
  const Shape s = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(s.K * 31 + s.N + s.bits));
  const Canonical c = random_layer(rng, s, "model.layers.0.self_attn.o_proj", {s.N});
  LinearOptions lo = layer_options();
  Result<Linear> made = Linear::create(c, gpu()->device, lo, c.name);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const Linear& lin = *made;
  const int64_t P = (s.N + 15) / 16;
  const int64_t max_m = s.bits == 4 ? 16 : 8;
  if (s.bits == 8) {
    // The 8-bit register pipelines have no fused form: they say so, and refuse a fused run.
    for (int64_t M = 1; M <= max_m + 1; ++M) {
      EXPECT_FALSE(lin.fusion_at(M).add_norm) << M;
      EXPECT_FALSE(lin.fusion_at(M).rms) << M;
    }
    DeviceMatrix x =
        upload(DType::kBF16, 1, s.K, uniform(rng, static_cast<std::size_t>(s.K), -1, 1));
    DeviceMatrix y =
        upload(DType::kF32, 1, s.N, std::vector<double>(static_cast<std::size_t>(s.N), 0));
    DeviceMatrix in = upload(DType::kF64, 1, 2, {1.0, 2.0});
    LinearFusion g;
    g.rms = RmsPrologue{in.cview(), 4, 1e-5f};
    ExecContext ctx;
    Result<Tensor> ws =
        Tensor::allocate(DType::kU8, {static_cast<int64_t>(lin.workspace_bytes(1)) + 16},
                         gpu()->context->allocator());
    ASSERT_TRUE(ws.ok());
    ctx.workspace = Workspace{ws->data(), lin.workspace_bytes(1) + 16, ws->location()};
    EXPECT_EQ(lin.run(x.cview(), y.view(), ctx, g).code(), ErrorCode::kUnsupported);
    return;
  }
  // Past the gemv's rows another kernel runs, which fuses nothing, and says so.
  EXPECT_FALSE(lin.fusion_at(max_m + 1).add_norm);
  EXPECT_FALSE(lin.fusion_at(max_m + 1).rms);
  for (int64_t M : {int64_t{1}, int64_t{3}, int64_t{8}, max_m}) {
    SCOPED_TRACE("M=" + std::to_string(M) + " bits=" + std::to_string(s.bits) +
                 " K=" + std::to_string(s.K) + " N=" + std::to_string(s.N));
    ASSERT_TRUE(lin.fusion_at(M).add_norm);
    ASSERT_TRUE(lin.fusion_at(M).rms);
    ASSERT_EQ(lin.bucket_for(M).kernel, "cuda.int.gemv.sm80");
    ExecContext ctx;
    Result<Tensor> ws =
        Tensor::allocate(DType::kU8, {static_cast<int64_t>(lin.workspace_bytes(M)) + 16},
                         gpu()->context->allocator());
    ASSERT_TRUE(ws.ok());
    ctx.workspace = Workspace{ws->data(), lin.workspace_bytes(M) + 16, ws->location()};
    DeviceMatrix x =
        upload(DType::kBF16, M, s.K, uniform(rng, static_cast<std::size_t>(M * s.K), -1, 1));
    DeviceMatrix y =
        upload(DType::kF32, M, s.N, std::vector<double>(static_cast<std::size_t>(M * s.N), 0));
    ASSERT_TRUE(lin.run(x.cview(), y.view(), ctx).ok());
    const std::vector<double> plain = download(y);

    // Epilogue: residual += y, pre = bf16(w * residual), partials.
    const std::vector<double> r0 = uniform(rng, static_cast<std::size_t>(M * s.N), -8, 8);
    const std::vector<double> w = uniform(rng, static_cast<std::size_t>(s.N), 0.2, 2);
    DeviceMatrix residual = upload(DType::kF32, M, s.N, r0);
    DeviceMatrix weight = upload(DType::kF32, 1, s.N, w);
    DeviceMatrix pre =
        upload(DType::kBF16, M, s.N, std::vector<double>(static_cast<std::size_t>(M * s.N), 0));
    DeviceMatrix partials =
        upload(DType::kF64, M, P, std::vector<double>(static_cast<std::size_t>(M * P), NAN));
    LinearFusion f;
    f.add_norm = AddNormEpilogue{residual.view(), weight.cview(), pre.view(), partials.view()};
    const Status st = lin.run(x.cview(), y.view(), ctx, f);
    ASSERT_TRUE(st.ok()) << st.to_string();
    const std::vector<double> got_r = download(residual);
    const std::vector<double> got_pre = download(pre);
    const std::vector<double> got_p = download(partials);
    int bad_r = 0, bad_pre = 0, bad_p = 0;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < P; ++j) {
        double want = 0.0;
        for (int64_t n = j * 16; n < std::min(s.N, j * 16 + 16); ++n) {
          const std::size_t i = static_cast<std::size_t>(m * s.N + n);
          const float sum = static_cast<float>(r0[i]) + static_cast<float>(plain[i]);
          if (got_r[i] != static_cast<double>(sum)) ++bad_r;
          const float prod = static_cast<float>(w[static_cast<std::size_t>(n)]) * sum;
          if (got_pre[i] != static_cast<double>(bf16_to_f32(f32_to_bf16(prod)))) ++bad_pre;
          want += static_cast<double>(sum) * sum;
        }
        const double got = got_p[static_cast<std::size_t>(m * P + j)];
        if (!(std::fabs(got - want) <= 1e-12 * want)) ++bad_p;
      }
    }
    EXPECT_EQ(bad_r, 0) << "residual elements differ from residual + y";
    EXPECT_EQ(bad_pre, 0) << "norm inputs differ from bf16(weight * residual)";
    EXPECT_EQ(bad_p, 0) << "partial sums of squares differ";

    // Prologue: y = inv_row * (x W^T) + bias, inv from the partials.
    const int64_t count = 5;
    const std::vector<double> sums = uniform(rng, static_cast<std::size_t>(M * count), 0.5, 40);
    DeviceMatrix in = upload(DType::kF64, M, count, sums);
    LinearFusion g;
    g.rms = RmsPrologue{in.cview(), 37, 1e-5f};
    ASSERT_TRUE(lin.run(x.cview(), y.view(), ctx, g).ok());
    const std::vector<double> scaled = download(y);
    const std::vector<float>& bias = std::get<IntWeights>(c.weights).bias;
    int bad_y = 0;
    for (int64_t m = 0; m < M; ++m) {
      double total = 0.0;
      for (int64_t j = 0; j < count; ++j) total += sums[static_cast<std::size_t>(m * count + j)];
      const auto inv = static_cast<float>(1.0 / std::sqrt(total / 37.0 + 1e-5f));
      for (int64_t n = 0; n < s.N; ++n) {
        const std::size_t i = static_cast<std::size_t>(m * s.N + n);
        const double b = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(n)];
        const double want = (plain[i] - b) * inv + b;
        if (!(std::fabs(scaled[i] - want) <= 1e-5 * (std::fabs(plain[i]) + std::fabs(b) + 1e-3))) {
          ++bad_y;
        }
      }
    }
    EXPECT_EQ(bad_y, 0) << "outputs differ from inv_rms * the plain product";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaNormFusion,
                         testing::Values(Shape{4, 2048, 8192, false}, Shape{4, 384, 72, true},
                                         Shape{4, 4096, 4096, true}, Shape{8, 1024, 4096, false}),
                         [](const testing::TestParamInfo<Shape>& p) {
                           return "w" + std::to_string(p.param.bits) + "_" +
                                  std::to_string(p.param.K) + "x" + std::to_string(p.param.N);
                         });

// silu(g) * u in f32 as the decoder's silu_mul computes it (host exp: within an ulp of CUDA's).
float host_swiglu(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }

class CudaSwiGlu : public testing::TestWithParam<Shape> {};

TEST_P(CudaSwiGlu, PairedColumnsRunPlainAndEndWithTheGatedProduct) {
  REQUIRE_GPU();
  const Shape s = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(s.K * 17 + s.N + s.bits));
  const Canonical c = random_layer(rng, s, "model.layers.0.mlp.gate_up_proj", {s.N / 2, s.N / 2});
  LinearOptions lo = layer_options();
  Result<Linear> plain_made = Linear::create(c, gpu()->device, lo, c.name);
  ASSERT_TRUE(plain_made.ok()) << plain_made.status().to_string();
  lo.swiglu_halves = true;
  Result<Linear> paired_made = Linear::create(c, gpu()->device, lo, c.name);
  ASSERT_TRUE(paired_made.ok()) << paired_made.status().to_string();
  const Linear& plain = *plain_made;
  const Linear& paired = *paired_made;
  const int64_t H = s.N / 2;
  const int64_t max_m = s.bits == 4 ? 16 : 8;
  EXPECT_FALSE(plain.fusion_at(1).swiglu) << "a layer without the hint offers the SwiGLU";
  EXPECT_FALSE(paired.fusion_at(max_m + 1).swiglu) << "past the gemv's rows";
  if (s.bits == 8) {
    // 8-bit codes keep the register pipelines, which have no fused form.
    for (int64_t M = 1; M <= max_m; ++M) EXPECT_FALSE(paired.fusion_at(M).swiglu) << M;
    return;
  }
  const std::vector<float>& bias = std::get<IntWeights>(c.weights).bias;
  for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{8}, int64_t{9}, max_m}) {
    SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(s.K) +
                 " N=" + std::to_string(s.N));
    ASSERT_TRUE(paired.fusion_at(M).swiglu);
    ASSERT_TRUE(paired.fusion_at(M).rms);
    EXPECT_FALSE(paired.fusion_at(M).add_norm) << "a paired tile holds no 16 columns of a norm";
    ASSERT_EQ(paired.bucket_for(M).kernel, "cuda.int.gemv.sm80");
    ExecContext ctx;
    Result<Tensor> ws =
        Tensor::allocate(DType::kU8, {static_cast<int64_t>(paired.workspace_bytes(M)) + 16},
                         gpu()->context->allocator());
    ASSERT_TRUE(ws.ok());
    ctx.workspace = Workspace{ws->data(), paired.workspace_bytes(M) + 16, ws->location()};
    DeviceMatrix x =
        upload(DType::kBF16, M, s.K, uniform(rng, static_cast<std::size_t>(M * s.K), -1, 1));
    DeviceMatrix y =
        upload(DType::kF32, M, s.N, std::vector<double>(static_cast<std::size_t>(M * s.N), NAN));
    ASSERT_TRUE(plain.run(x.cview(), y.view(), ctx).ok());
    const std::vector<double> want_y = download(y);
    DeviceMatrix y2 =
        upload(DType::kF32, M, s.N, std::vector<double>(static_cast<std::size_t>(M * s.N), NAN));
    ASSERT_TRUE(paired.run(x.cview(), y2.view(), ctx).ok());
    const std::vector<double> got_y = download(y2);
    int far = 0, inexact = 0;
    for (std::size_t i = 0; i < want_y.size(); ++i) {
      if (!(std::fabs(got_y[i] - want_y[i]) <= 1e-5 * (std::fabs(want_y[i]) + 1e-3))) ++far;
      if (got_y[i] != want_y[i]) ++inexact;
    }
    EXPECT_EQ(far, 0) << "the paired layer's plain outputs are not the layer's columns";
    std::cout << "[ swiglu   ] M " << M << ": paired plain run, " << inexact << " of "
              << want_y.size() << " outputs not bit-equal to the unpaired layer's\n";

    // The epilogue: out = silu(gate) * up of the paired run's own outputs, in bf16.
    DeviceMatrix out =
        upload(DType::kBF16, M, H, std::vector<double>(static_cast<std::size_t>(M * H), NAN));
    LinearFusion f;
    f.swiglu = SwiGluEpilogue{out.view()};
    const Status st = paired.run(x.cview(), y2.view(), ctx, f);
    ASSERT_TRUE(st.ok()) << st.to_string();
    const std::vector<double> got = download(out);
    int bad = 0, off_by_rounding = 0;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < H; ++j) {
        const auto g = static_cast<float>(got_y[static_cast<std::size_t>(m * s.N + j)]);
        const auto u = static_cast<float>(got_y[static_cast<std::size_t>(m * s.N + H + j)]);
        const float want = bf16_to_f32(f32_to_bf16(host_swiglu(g, u)));
        const double v = got[static_cast<std::size_t>(m * H + j)];
        if (v != static_cast<double>(want)) ++off_by_rounding;
        if (!(std::fabs(v - want) <= 8e-3 * std::fabs(want) + 1e-6)) ++bad;
      }
    }
    EXPECT_EQ(bad, 0) << "SwiGLU outputs differ from silu(gate) * up of the plain outputs";
    EXPECT_LE(off_by_rounding, M * H / 100 + 1) << "more than 1% off by a bf16 rounding";

    // With the RMS prologue: gate and up scaled by each row's inverse RMS before the bias.
    const int64_t count = 3;
    const std::vector<double> sums = uniform(rng, static_cast<std::size_t>(M * count), 0.5, 40);
    DeviceMatrix in = upload(DType::kF64, M, count, sums);
    f.rms = RmsPrologue{in.cview(), 29, 1e-5f};
    ASSERT_TRUE(paired.run(x.cview(), y2.view(), ctx, f).ok());
    const std::vector<double> scaled = download(out);
    int bad_rms = 0;
    for (int64_t m = 0; m < M; ++m) {
      double total = 0.0;
      for (int64_t j = 0; j < count; ++j) total += sums[static_cast<std::size_t>(m * count + j)];
      const auto inv = static_cast<float>(1.0 / std::sqrt(total / 29.0 + 1e-5f));
      for (int64_t j = 0; j < H; ++j) {
        const double bg = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(j)];
        const double bu = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(H + j)];
        const auto g =
            static_cast<float>((got_y[static_cast<std::size_t>(m * s.N + j)] - bg) * inv + bg);
        const auto u =
            static_cast<float>((got_y[static_cast<std::size_t>(m * s.N + H + j)] - bu) * inv + bu);
        const double want = host_swiglu(g, u);
        const double v = scaled[static_cast<std::size_t>(m * H + j)];
        if (!(std::fabs(v - want) <= 1e-2 * std::fabs(want) + 1e-4)) ++bad_rms;
      }
    }
    EXPECT_EQ(bad_rms, 0) << "SwiGLU outputs with the RMS prologue differ";
  }
}

// Wide (a warp per tile), narrow (K slices reduced through shared memory), a half of 40 columns
// (not a multiple of 16: tiles straddle the gate / up boundary in the layer's order), and 8-bit.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaSwiGlu,
                         testing::Values(Shape{4, 2048, 8192, true}, Shape{4, 1024, 512, false},
                                         Shape{4, 384, 80, true}, Shape{8, 1024, 4096, false}),
                         [](const testing::TestParamInfo<Shape>& p) {
                           return "w" + std::to_string(p.param.bits) + "_" +
                                  std::to_string(p.param.K) + "x" + std::to_string(p.param.N);
                         });

}  // namespace
}  // namespace qlinear
