// The OpenCL decoder operations (make_opencl_ops) against the CPU ones (make_cpu_ops, which
// cpu_ops_test checks against double-precision definitions), on this machine's first OpenCL
// device (PoCL in CI): the same seeded inputs, uploaded into device buffers as views with leading
// dimensions and offsets, each op's output downloaded and compared element by element. Skipped
// without an OpenCL backend or device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "argmax_rows.h"
#include "core/tensor.h"
#include "kernels/device_context.h"
#include "model/ops.h"
#include "qlinear/device.h"

namespace qlinear {
namespace {

std::vector<float> random(std::mt19937& rng, std::size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// One device buffer holding a host copy, and views of both.
struct Pair {
  std::vector<std::byte> host;
  Tensor device;
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0, ld = 0, offset = 0;  // offset: elements before (0, 0)

  MatrixView host_view() {
    return MatrixView(host.data() + offset * dtype_size(dtype), dtype, rows, cols, ld);
  }
  MatrixView device_view() {
    return MatrixView(device.data(), dtype, rows, cols, ld, device.location(), offset);
  }
};

class OpenClOpsTest : public testing::Test {
 protected:
  void SetUp() override {
    Result<Device> device = detect_device("opencl");
    if (!device.ok()) GTEST_SKIP() << "no OpenCL device: " << device.status().to_string();
    Result<DeviceContext*> ctx = device_context(*device);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    ctx_ = *ctx;
    auto ops = make_opencl_ops(*ctx_);
    ASSERT_TRUE(ops.ok()) << ops.status().to_string();
    gpu_ = std::move(ops).value();
    cpu_ = make_cpu_ops(1);
  }

  // A [rows, cols] matrix with leading dimension ld and `offset` leading elements, of `values`
  // (as f32, bf16, f16, e4m3 or i32) on both sides.
  Pair make(DType dtype, int64_t rows, int64_t cols, int64_t ld, int64_t offset,
            const std::vector<float>& values) {
    Pair p;
    p.dtype = dtype;
    p.rows = rows;
    p.cols = cols;
    p.ld = ld;
    p.offset = offset;
    const std::size_t elements = static_cast<std::size_t>(offset + rows * ld);
    p.host.resize(elements * dtype_size(dtype));
    for (std::size_t i = 0; i < elements; ++i) {
      const float v = values[i % values.size()];
      std::byte* at = p.host.data() + i * dtype_size(dtype);
      if (dtype == DType::kF32) {
        std::memcpy(at, &v, 4);
      } else if (dtype == DType::kI32) {
        const auto n = static_cast<int32_t>(v);
        std::memcpy(at, &n, 4);
      } else if (dtype == DType::kF8E4M3) {
        const uint8_t b = f32_to_f8e4m3(v);
        std::memcpy(at, &b, 1);
      } else {
        const uint16_t b = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
        std::memcpy(at, &b, 2);
      }
    }
    auto t = Tensor::allocate(DType::kU8, {static_cast<int64_t>(p.host.size())}, ctx_->allocator());
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    if (t.ok()) {
      p.device = std::move(t).value();
      EXPECT_TRUE(ctx_->upload(p.device.data(), 0, p.host.data(), p.host.size()).ok());
    }
    return p;
  }

  // The device copy back on the host, as floats of the view's elements, and the host copy's.
  std::vector<float> device_floats(Pair& p) {
    std::vector<std::byte> back(p.host.size());
    EXPECT_TRUE(ctx_->synchronize().ok());
    EXPECT_TRUE(ctx_->download(back.data(), p.device.data(), 0, back.size()).ok());
    return floats(p, back);
  }
  static std::vector<float> host_floats(Pair& p) { return floats(p, p.host); }
  static std::vector<float> floats(const Pair& p, const std::vector<std::byte>& bytes) {
    std::vector<float> out;
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t c = 0; c < p.cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(p.offset + r * p.ld + c);
        out.push_back(load_as_f32(bytes.data(), p.dtype, i));
      }
    }
    return out;
  }

  static void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                           double tolerance, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
      const double scale = std::max(1.0, std::abs(static_cast<double>(want[i])));
      if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tolerance * scale)) {
        ADD_FAILURE() << what << " element " << i << ": opencl " << got[i] << ", cpu " << want[i];
        ++bad;
      }
    }
  }

  DeviceContext* ctx_ = nullptr;
  std::unique_ptr<DecoderOps> gpu_;
  std::unique_ptr<DecoderOps> cpu_;
  std::mt19937 rng_{15};
};

TEST_F(OpenClOpsTest, EmbedNormsAddCopySiluMulMatchTheCpuOps) {
  // embed from a bf16 table into rows with ld 40 and an offset; ids on the host.
  Pair table = make(DType::kBF16, 50, 32, 32, 0, random(rng_, 50 * 32));
  Pair ids = make(DType::kI32, 1, 3, 3, 0, {7, 49, 0});
  Pair out = make(DType::kF32, 3, 32, 40, 5, {NAN});
  ASSERT_TRUE(cpu_->embed(table.host_view(), ids.host_view(), out.host_view()).ok());
  ASSERT_TRUE(gpu_->embed(table.device_view(), ids.host_view(), out.device_view()).ok());
  expect_close(device_floats(out), host_floats(out), 0, "embed (host ids)");
  // The same with the ids in device memory.
  Pair out2 = make(DType::kF32, 3, 32, 32, 0, {NAN});
  ASSERT_TRUE(gpu_->embed(table.device_view(), ids.device_view(), out2.device_view()).ok());
  expect_close(device_floats(out2), host_floats(out), 0, "embed (device ids)");

  // rms_norm into bf16 and f16 outputs, add_rms_norm on a residual with ld.
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    Pair x = make(DType::kF32, 4, 200, 210, 3, random(rng_, 4 * 210 + 3));
    Pair w = make(DType::kF32, 1, 200, 200, 0, random(rng_, 200));
    Pair y = make(dtype, 4, 200, 200, 0, {NAN});
    ASSERT_TRUE(cpu_->rms_norm(x.host_view(), w.host_view(), 1e-5f, y.host_view()).ok());
    ASSERT_TRUE(gpu_->rms_norm(x.device_view(), w.device_view(), 1e-5f, y.device_view()).ok());
    // f32 sums (opencl) vs double sums (cpu): 1e-5; a 16-bit output may round the other way.
    expect_close(device_floats(y), host_floats(y), dtype == DType::kF32 ? 1e-5 : 1e-2,
                 std::string("rms_norm to ") + std::string(dtype_name(dtype)));
  }
  Pair residual = make(DType::kF32, 3, 64, 70, 0, random(rng_, 3 * 70));
  Pair delta = make(DType::kBF16, 3, 64, 64, 0, random(rng_, 3 * 64));
  Pair w = make(DType::kF32, 1, 64, 64, 0, random(rng_, 64));
  Pair normed = make(DType::kF32, 3, 64, 64, 0, {NAN});
  ASSERT_TRUE(cpu_->add_rms_norm(residual.host_view(), delta.host_view(), w.host_view(), 1e-6f,
                                 normed.host_view())
                  .ok());
  ASSERT_TRUE(gpu_->add_rms_norm(residual.device_view(), delta.device_view(), w.device_view(),
                                 1e-6f, normed.device_view())
                  .ok());
  expect_close(device_floats(residual), host_floats(residual), 1e-6, "add_rms_norm residual");
  expect_close(device_floats(normed), host_floats(normed), 1e-5, "add_rms_norm output");

  // head_rms_norm in place (Qwen3's q_norm), 3 heads of 16.
  Pair q = make(DType::kF32, 2, 48, 50, 0, random(rng_, 100));
  Pair qw = make(DType::kF32, 1, 16, 16, 0, random(rng_, 16));
  ASSERT_TRUE(cpu_->head_rms_norm(q.host_view(), 16, qw.host_view(), 1e-6f).ok());
  ASSERT_TRUE(gpu_->head_rms_norm(q.device_view(), 16, qw.device_view(), 1e-6f).ok());
  expect_close(device_floats(q), host_floats(q), 1e-5, "head_rms_norm");

  // silu_mul into f16, copy f32 -> bf16 with ld.
  Pair gate = make(DType::kF32, 3, 33, 33, 0, random(rng_, 99));
  Pair up = make(DType::kF32, 3, 33, 40, 1, random(rng_, 121));
  Pair act = make(DType::kF16, 3, 33, 33, 0, {NAN});
  ASSERT_TRUE(cpu_->silu_mul(gate.host_view(), up.host_view(), act.host_view()).ok());
  ASSERT_TRUE(gpu_->silu_mul(gate.device_view(), up.device_view(), act.device_view()).ok());
  expect_close(device_floats(act), host_floats(act), 1e-3, "silu_mul to f16");
  Pair dst = make(DType::kBF16, 3, 33, 36, 2, {NAN});
  ASSERT_TRUE(cpu_->copy(up.host_view(), dst.host_view()).ok());
  ASSERT_TRUE(gpu_->copy(up.device_view(), dst.device_view()).ok());
  expect_close(device_floats(dst), host_floats(dst), 0, "copy f32 to bf16");
}

TEST_F(OpenClOpsTest, RopeStoreKvAttentionMatchTheCpuOps) {
  const int64_t heads = 6, kv_heads = 2, d = 16, half = 8, capacity = 80, layers = 2, T = 3;
  const int64_t width = kv_heads * d;
  std::vector<float> cos(capacity * half), sin(capacity * half);
  for (int64_t p = 0; p < capacity; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      cos[p * half + i] = std::cos(static_cast<float>(p * (i + 1)) * 0.05f);
      sin[p * half + i] = std::sin(static_cast<float>(p * (i + 1)) * 0.05f);
    }
  }
  Pair cos_t = make(DType::kF32, capacity, half, half, 0, cos);
  Pair sin_t = make(DType::kF32, capacity, half, half, 0, sin);
  const RopeTable host_table{capacity, half, cos_t.host_view(), sin_t.host_view()};
  const RopeTable device_table{capacity, half, cos_t.device_view(), sin_t.device_view()};
  Pair pos = make(DType::kI32, 1, T, T, 0, {70, 71, 40});  // 70+ keys
  for (DType kv_dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    const bool fp8 = kv_dtype == DType::kF8E4M3;
    for (int64_t window : {int64_t{0}, int64_t{5}}) {
      const std::string what =
          std::string(dtype_name(kv_dtype)) + " window " + std::to_string(window);
      // Caches with history: both start from the same random contents (an FP8 cache's scales
      // too, src/model/kv_fp8.h).
      const std::vector<float> history = random(rng_, layers * capacity * width);
      Pair kc = make(kv_dtype, layers * capacity, width, width, 0, history);
      Pair vc = make(kv_dtype, layers * capacity, width, width, 0, random(rng_, history.size()));
      const std::vector<float> scale_history = random(rng_, layers * capacity * kv_heads);
      Pair ks = make(DType::kF32, layers * capacity, kv_heads, kv_heads, 0, scale_history);
      Pair vs = make(DType::kF32, layers * capacity, kv_heads, kv_heads, 0, scale_history);
      auto cache = [&](bool device) {
        KvCacheView view{layers,
                         capacity,
                         kv_heads,
                         d,
                         device ? kc.device_view() : kc.host_view(),
                         device ? vc.device_view() : vc.host_view()};
        if (fp8) {
          view.k_scale = device ? ks.device_view() : ks.host_view();
          view.v_scale = device ? vs.device_view() : vs.host_view();
        }
        return view;
      };
      // q, k with rope; k, v stored at the positions of layer 1; attention over layer 1.
      Pair q = make(DType::kF32, T, heads * d, heads * d + 4, 0, random(rng_, T * 100));
      Pair k = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
      Pair v = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
      for (Pair* p : {&q, &k}) {
        ASSERT_TRUE(cpu_->rope(p->host_view(), d, pos.host_view(), host_table).ok());
        ASSERT_TRUE(gpu_->rope(p->device_view(), d, pos.device_view(), device_table).ok());
      }
      expect_close(device_floats(q), host_floats(q), 1e-6, "rope q " + what);
      if (fp8) {
        // The same rotated keys on both sides (rope agrees to 1e-6, which could move a code by a
        // step): the FP8 store must then write the CPU's codes and scales exactly.
        ASSERT_TRUE(ctx_->upload(k.device.data(), 0, k.host.data(), k.host.size()).ok());
      }
      ASSERT_TRUE(
          cpu_->store_kv(k.host_view(), v.host_view(), pos.host_view(), cache(false), 1).ok());
      ASSERT_TRUE(
          gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1).ok());
      expect_close(device_floats(kc), host_floats(kc), fp8 ? 0 : 1e-6, "store_kv keys " + what);
      expect_close(device_floats(vc), host_floats(vc), 0, "store_kv values " + what);
      expect_close(device_floats(ks), host_floats(ks), 0, "store_kv key scales " + what);
      expect_close(device_floats(vs), host_floats(vs), 0, "store_kv value scales " + what);
      Pair out = make(DType::kF32, T, heads * d, heads * d, 0, {NAN});
      const AttentionShape shape{heads, kv_heads, d, window};
      ASSERT_TRUE(
          cpu_->attention(q.host_view(), pos.host_view(), cache(false), 1, shape, out.host_view())
              .ok());
      ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1, shape,
                                  out.device_view())
                      .ok());
      expect_close(device_floats(out), host_floats(out), 2e-5, "attention " + what);
    }
  }
}

// A cache of three sequences, one row per sequence (batched decode): store_kv and attention
// against the CPU ops (which cpu_ops_test checks against a double reference), f32, bf16 and FP8
// caches.
TEST_F(OpenClOpsTest, CacheSequencesMatchTheCpuOps) {
  const int64_t heads = 8, kv_heads = 2, d = 64, capacity = 96, layers = 2, sequences = 3, T = 3;
  const int64_t width = kv_heads * d, rows = layers * sequences * capacity;
  Pair pos = make(DType::kI32, 1, T, T, 0, {70, 12, 95});
  for (DType kv_dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    const std::string what(dtype_name(kv_dtype));
    const std::vector<float> history = random(rng_, rows * width);
    const std::vector<float> v_history = random(rng_, rows * width);
    Pair kc = make(kv_dtype, rows, width, width, 0, history);
    Pair vc = make(kv_dtype, rows, width, width, 0, v_history);
    const std::vector<float> scale_history = random(rng_, rows * kv_heads);
    Pair ks = make(DType::kF32, rows, kv_heads, kv_heads, 0, scale_history);
    Pair vs = make(DType::kF32, rows, kv_heads, kv_heads, 0, scale_history);
    auto cache = [&](bool device) {
      KvCacheView view{layers,
                       capacity,
                       kv_heads,
                       d,
                       device ? kc.device_view() : kc.host_view(),
                       device ? vc.device_view() : vc.host_view(),
                       sequences,
                       0,
                       1};
      if (kv_dtype == DType::kF8E4M3) {
        view.k_scale = device ? ks.device_view() : ks.host_view();
        view.v_scale = device ? vs.device_view() : vs.host_view();
      }
      return view;
    };
    Pair k = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
    Pair v = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
    ASSERT_TRUE(
        cpu_->store_kv(k.host_view(), v.host_view(), pos.host_view(), cache(false), 1).ok());
    ASSERT_TRUE(
        gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1).ok());
    expect_close(device_floats(kc), host_floats(kc), 0, "store_kv keys " + what);
    expect_close(device_floats(vc), host_floats(vc), 0, "store_kv values " + what);
    expect_close(device_floats(ks), host_floats(ks), 0, "store_kv key scales " + what);
    expect_close(device_floats(vs), host_floats(vs), 0, "store_kv value scales " + what);
    Pair q = make(DType::kF32, T, heads * d, heads * d, 0, random(rng_, T * heads * d));
    Pair out = make(DType::kF32, T, heads * d, heads * d, 0, {NAN});
    const AttentionShape shape{heads, kv_heads, d, 0};
    ASSERT_TRUE(
        cpu_->attention(q.host_view(), pos.host_view(), cache(false), 1, shape, out.host_view())
            .ok());
    ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1, shape,
                                out.device_view())
                    .ok());
    expect_close(device_floats(out), host_floats(out), 2e-5, "attention " + what);
  }
}

// The greedy ids of rows whose answers are known by construction (argmax_rows.h: ties across the
// kernel's threads and passes, NaN, rows without a value above -inf, padding that would win), the
// logits at an offset with a leading dimension; the CPU ops pick the same.
TEST_F(OpenClOpsTest, ArgmaxIsTheFirstMaximumNanNeverWinning) {
  for (const int64_t cols : {int64_t{10}, int64_t{1003}, int64_t{128256}}) {
    const test_rows::ArgmaxRows r = test_rows::argmax_rows(cols, 5);
    std::vector<float> values(3, 1e30f);  // 3 elements before (0, 0)
    values.insert(values.end(), r.values.begin(), r.values.end());
    Pair logits = make(DType::kF32, r.rows, r.cols, r.ld, 3, values);
    Pair ids = make(DType::kI32, 1, r.rows, r.rows, 2, std::vector<float>{-1.0f});
    ASSERT_TRUE(gpu_->argmax(logits.device_view(), ids.device_view()).ok());
    ASSERT_TRUE(cpu_->argmax(logits.host_view(), ids.host_view()).ok());
    const std::vector<float> got = device_floats(ids);
    const std::vector<float> cpu = host_floats(ids);
    for (int64_t t = 0; t < r.rows; ++t) {
      const auto i = static_cast<std::size_t>(t);
      EXPECT_EQ(static_cast<int32_t>(got[i]), r.expected[i]) << "row " << t << " of " << cols;
      EXPECT_EQ(static_cast<int32_t>(cpu[i]), r.expected[i]) << "cpu row " << t << " of " << cols;
    }
  }
}

TEST_F(OpenClOpsTest, BadInputsAreErrorsNamingTheValue) {
  Pair table = make(DType::kF32, 4, 3, 3, 0, {1.0f});
  Pair ids = make(DType::kI32, 1, 2, 2, 0, {1, 4});
  Pair out = make(DType::kF32, 2, 3, 3, 0, {0.0f});
  Status s = gpu_->embed(table.device_view(), ids.host_view(), out.device_view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("token id 4 at position 1"), std::string::npos) << s.message();
  // Host memory where device memory is needed names the operand and both locations.
  s = gpu_->embed(table.host_view(), ids.host_view(), out.device_view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the table lives in host memory"), std::string::npos) << s.message();
  Pair x = make(DType::kF32, 2, 8, 8, 0, {1.0f});
  Pair w = make(DType::kF32, 1, 7, 7, 0, {1.0f});
  s = gpu_->rms_norm(x.device_view(), w.device_view(), 1e-5f, x.device_view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("weight is [1, 7]; expected [1, 8]"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace qlinear
