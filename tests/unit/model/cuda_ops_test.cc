// The CUDA decoder operations (make_cuda_ops) against the CPU ones (make_cpu_ops, which
// cpu_ops_test checks against double-precision definitions), on this machine's first CUDA GPU:
// the same seeded inputs, uploaded into device buffers as views with leading dimensions, each
// op's output downloaded and compared element by element. Embedding, RoPE, the KV store, add and
// copy must be bit for bit the CPU's (NaN payloads included), the norms nearly so (f64 sums in
// another order), attention and SiLU to f32 rounding. Skipped without a CUDA backend or GPU (CI
// compiles this and skips).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
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

// Sets an environment variable for a scope (the CUDA ops read their kernel knobs per call).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  const char* name_;
};

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
  // CUDA memory is addressed by pointers: the offset moves the address.
  MatrixView device_view() {
    return MatrixView(static_cast<std::byte*>(device.data()) + offset * dtype_size(dtype), dtype,
                      rows, cols, ld, device.location());
  }
};

class CudaOpsTest : public testing::Test {
 protected:
  void SetUp() override {
    Result<Device> device = detect_device("cuda");
    if (!device.ok()) GTEST_SKIP() << "no CUDA GPU: " << device.status().to_string();
    Result<DeviceContext*> ctx = device_context(*device);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    ctx_ = *ctx;
    auto ops = make_cuda_ops(*ctx_);
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
      } else if (dtype == DType::kU8) {
        const auto b = static_cast<uint8_t>(v);
        std::memcpy(at, &b, 1);
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

  // The whole device buffer back on the host (padding included).
  std::vector<std::byte> device_bytes(Pair& p) {
    std::vector<std::byte> back(p.host.size());
    EXPECT_TRUE(ctx_->synchronize().ok());
    EXPECT_TRUE(ctx_->download(back.data(), p.device.data(), 0, back.size()).ok());
    return back;
  }
  // The device copy as floats of the view's elements, and the host copy's.
  std::vector<float> device_floats(Pair& p) { return floats(p, device_bytes(p)); }
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

  // Every byte of the buffer equal, padding between rows included (nothing written outside the
  // view, every element bit for bit the CPU's).
  void expect_same_bytes(Pair& p, const std::string& what) {
    const std::vector<std::byte> got = device_bytes(p);
    ASSERT_EQ(got.size(), p.host.size());
    const std::size_t size = dtype_size(p.dtype);
    int bad = 0;
    for (std::size_t i = 0; i < got.size() && bad < 5; i += size) {
      if (std::memcmp(got.data() + i, p.host.data() + i, size) != 0) {
        ADD_FAILURE() << what << " element " << i / size << ": cuda "
                      << load_as_f32(got.data(), p.dtype, i / size) << ", cpu "
                      << load_as_f32(p.host.data(), p.dtype, i / size) << " (bits differ)";
        ++bad;
      }
    }
  }

  static void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                           double tolerance, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
      const double scale = std::max(1.0, std::abs(static_cast<double>(want[i])));
      if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tolerance * scale)) {
        ADD_FAILURE() << what << " element " << i << ": cuda " << got[i] << ", cpu " << want[i];
        ++bad;
      }
    }
  }

  DeviceContext* ctx_ = nullptr;
  std::unique_ptr<DecoderOps> gpu_;
  std::unique_ptr<DecoderOps> cpu_;
  std::mt19937 rng_{14};
};

TEST_F(CudaOpsTest, EmbedNormsAddCopySiluMulMatchTheCpuOps) {
  // embed from bf16, f16 and f32 tables into rows with ld 40 and an offset; ids on the host and
  // in device memory.
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    const std::string name(dtype_name(dtype));
    Pair table = make(dtype, 50, 32, 32, 0, random(rng_, 50 * 32));
    Pair ids = make(DType::kI32, 1, 3, 3, 0, {7, 49, 0});
    Pair out = make(DType::kF32, 3, 32, 40, 5, {NAN});
    ASSERT_TRUE(cpu_->embed(table.host_view(), ids.host_view(), out.host_view()).ok());
    ASSERT_TRUE(gpu_->embed(table.device_view(), ids.host_view(), out.device_view()).ok());
    expect_same_bytes(out, "embed from " + name + " (host ids)");
    Pair out2 = make(DType::kF32, 3, 32, 32, 0, {NAN});
    ASSERT_TRUE(gpu_->embed(table.device_view(), ids.device_view(), out2.device_view()).ok());
    expect_close(device_floats(out2), host_floats(out), 0, "embed from " + name + " (device ids)");
  }

  // rms_norm into f32, bf16 and f16 outputs over rows of 200 and 4096 (a Llama-sized row).
  for (int64_t n : {int64_t{200}, int64_t{4096}}) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      Pair x = make(DType::kF32, 4, n, n + 10, 3, random(rng_, 4 * (n + 10) + 3));
      Pair w = make(DType::kF32, 1, n, n, 0, random(rng_, n));
      Pair y = make(dtype, 4, n, n, 0, {NAN});
      ASSERT_TRUE(cpu_->rms_norm(x.host_view(), w.host_view(), 1e-5f, y.host_view()).ok());
      ASSERT_TRUE(gpu_->rms_norm(x.device_view(), w.device_view(), 1e-5f, y.device_view()).ok());
      // Both sum in f64: the inverse RMS rounds to the same f32 unless the sums straddle a
      // rounding boundary (one f32 ulp then, and a 16-bit output may round the other way).
      expect_close(device_floats(y), host_floats(y), dtype == DType::kF32 ? 1e-6 : 1e-2,
                   "rms_norm " + std::to_string(n) + " to " + std::string(dtype_name(dtype)));
    }
  }
  // add_rms_norm on a residual with ld, deltas of every float dtype.
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const std::string name(dtype_name(dtype));
    Pair residual = make(DType::kF32, 3, 64, 70, 0, random(rng_, 3 * 70));
    Pair delta = make(dtype, 3, 64, 64, 0, random(rng_, 3 * 64));
    Pair w = make(DType::kF32, 1, 64, 64, 0, random(rng_, 64));
    Pair normed = make(DType::kBF16, 3, 64, 64, 0, {NAN});
    ASSERT_TRUE(cpu_->add_rms_norm(residual.host_view(), delta.host_view(), w.host_view(), 1e-6f,
                                   normed.host_view())
                    .ok());
    ASSERT_TRUE(gpu_->add_rms_norm(residual.device_view(), delta.device_view(), w.device_view(),
                                   1e-6f, normed.device_view())
                    .ok());
    expect_same_bytes(residual, "add_rms_norm residual, " + name + " delta");
    expect_close(device_floats(normed), host_floats(normed), 1e-2,
                 "add_rms_norm output, " + name + " delta");
  }

  // head_rms_norm in place (Qwen3's q_norm): 3 heads of 16, and 4 of 128.
  for (int64_t d : {int64_t{16}, int64_t{128}}) {
    Pair q = make(DType::kF32, 2, 3 * d, 3 * d + 2, 0, random(rng_, 6 * d + 4));
    Pair qw = make(DType::kF32, 1, d, d, 0, random(rng_, d));
    ASSERT_TRUE(cpu_->head_rms_norm(q.host_view(), d, qw.host_view(), 1e-6f).ok());
    ASSERT_TRUE(gpu_->head_rms_norm(q.device_view(), d, qw.device_view(), 1e-6f).ok());
    expect_close(device_floats(q), host_floats(q), 1e-6, "head_rms_norm " + std::to_string(d));
  }

  // silu_mul into f32 and f16, add of every dtype, copy between every pair of dtypes.
  Pair gate = make(DType::kF32, 3, 33, 33, 0, random(rng_, 99));
  Pair up = make(DType::kF32, 3, 33, 40, 1, random(rng_, 121));
  for (DType dtype : {DType::kF32, DType::kF16}) {
    Pair act = make(dtype, 3, 33, 35, 0, {NAN});
    ASSERT_TRUE(cpu_->silu_mul(gate.host_view(), up.host_view(), act.host_view()).ok());
    ASSERT_TRUE(gpu_->silu_mul(gate.device_view(), up.device_view(), act.device_view()).ok());
    // expf's last bit may differ from the host's.
    expect_close(device_floats(act), host_floats(act), dtype == DType::kF32 ? 1e-6 : 1e-3,
                 "silu_mul to " + std::string(dtype_name(dtype)));
  }
  for (DType src_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    Pair dst = make(DType::kF32, 3, 33, 34, 0, random(rng_, 3 * 34));
    Pair src = make(src_dtype, 3, 33, 36, 2, random(rng_, 3 * 36 + 2));
    ASSERT_TRUE(cpu_->add(dst.host_view(), src.host_view()).ok());
    ASSERT_TRUE(gpu_->add(dst.device_view(), src.device_view()).ok());
    expect_same_bytes(dst, "add of " + std::string(dtype_name(src_dtype)));
    for (DType dst_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      Pair out = make(dst_dtype, 3, 33, 37, 1, {NAN});
      ASSERT_TRUE(cpu_->copy(src.host_view(), out.host_view()).ok());
      ASSERT_TRUE(gpu_->copy(src.device_view(), out.device_view()).ok());
      expect_same_bytes(out, "copy " + std::string(dtype_name(src_dtype)) + " to " +
                                 std::string(dtype_name(dst_dtype)));
    }
  }
}

// The conversions are core/dtype.cc's bit for bit: ties to even, subnormals, overflow, infinities
// and NaN payloads (which the hardware conversions would make one canonical NaN).
TEST_F(CudaOpsTest, ConversionsAreTheHostConvertersBitForBit) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.5f,
                               65504.0f,
                               65520.0f,
                               70000.0f,
                               -1e30f,
                               3.4e38f,
                               1e-8f,
                               -6e-8f,
                               2.98e-8f,
                               1e-40f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::quiet_NaN()};
  for (uint32_t bits : {0x7F800001u, 0xFFA12345u, 0x3F808000u, 0x3F818000u, 0x3F80C000u,
                        0x33000000u, 0x387FE000u, 0x477FF000u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    values.push_back(f);  // signalling NaN payloads, bf16 / f16 ties and boundaries
  }
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000; ++i) {
    const uint32_t bits = any(rng_);
    float f;
    std::memcpy(&f, &bits, 4);
    values.push_back(f);
  }
  const auto n = static_cast<int64_t>(values.size());
  Pair src = make(DType::kF32, 1, n, n, 0, values);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::string name(dtype_name(dtype));
    Pair down = make(dtype, 1, n, n, 0, {0.0f});
    ASSERT_TRUE(cpu_->copy(src.host_view(), down.host_view()).ok());
    ASSERT_TRUE(gpu_->copy(src.device_view(), down.device_view()).ok());
    expect_same_bytes(down, "f32 to " + name);
    // And back up: every 16-bit pattern the host produced, read as f32.
    Pair up = make(DType::kF32, 1, n, n, 0, {0.0f});
    ASSERT_TRUE(ctx_->upload(down.device.data(), 0, down.host.data(), down.host.size()).ok());
    ASSERT_TRUE(cpu_->copy(down.host_view(), up.host_view()).ok());
    ASSERT_TRUE(gpu_->copy(down.device_view(), up.device_view()).ok());
    expect_same_bytes(up, name + " to f32");
  }
}

TEST_F(CudaOpsTest, RopeStoreKvAttentionMatchTheCpuOps) {
  struct Case {
    int64_t heads, kv_heads, d, capacity, layers;
    std::vector<float> positions;
  };
  // Small heads; Llama's 128-dim heads with GQA 4 and positions past several warps' key runs;
  // a 256-dim head (Gemma-like) and one of 80 (not a multiple of 32); a prefill of 40 rows; one
  // decode row at a long context and one at a short one; a head of 66 (an FP8 cache's lanes hold 4
  // consecutive dimensions: the last lane holds 2, and the rows are not word-aligned). Rows * heads
  // below two blocks per SM split the keys over blocks (cuda_ops.cc split_keys; on an H200 every
  // case here splits), with splits that get no key (window 5) and ranges far longer than a split.
  std::vector<float> prefill;
  for (int p = 0; p < 40; ++p) prefill.push_back(static_cast<float>(p));
  const std::vector<Case> cases = {
      {6, 2, 16, 80, 2, {70, 71, 40}}, {8, 2, 128, 300, 2, {290, 0, 137}},
      {8, 2, 128, 3000, 2, {2900}},    {8, 2, 128, 300, 2, {37}},
      {4, 4, 256, 96, 2, {95}},        {6, 3, 80, 64, 2, {33, 63}},
      {4, 1, 64, 64, 2, prefill},      {4, 2, 66, 64, 2, {40, 7}}};
  for (const Case& c : cases) {
    const int64_t half = c.d / 2;
    const int64_t width = c.kv_heads * c.d;
    const auto T = static_cast<int64_t>(c.positions.size());
    std::vector<float> cos(c.capacity * half), sin(c.capacity * half);
    for (int64_t p = 0; p < c.capacity; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        cos[p * half + i] = std::cos(static_cast<float>(p * (i + 1)) * 0.05f);
        sin[p * half + i] = std::sin(static_cast<float>(p * (i + 1)) * 0.05f);
      }
    }
    Pair cos_t = make(DType::kF32, c.capacity, half, half, 0, cos);
    Pair sin_t = make(DType::kF32, c.capacity, half, half, 0, sin);
    const RopeTable host_table{c.capacity, half, cos_t.host_view(), sin_t.host_view()};
    const RopeTable device_table{c.capacity, half, cos_t.device_view(), sin_t.device_view()};
    Pair pos = make(DType::kI32, 1, T, T, 0, c.positions);
    for (DType kv_dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
      const bool fp8 = kv_dtype == DType::kF8E4M3;
      for (int64_t window : {int64_t{0}, int64_t{5}, int64_t{100}}) {
        const std::string what = "heads " + std::to_string(c.heads) + "/" +
                                 std::to_string(c.kv_heads) + " d " + std::to_string(c.d) + " " +
                                 std::string(dtype_name(kv_dtype)) + " window " +
                                 std::to_string(window);
        // Caches with history: both start from the same random contents.
        const std::vector<float> history = random(rng_, c.layers * c.capacity * width);
        const std::vector<float> v_history = random(rng_, history.size());
        Pair kc = make(kv_dtype, c.layers * c.capacity, width, width, 0, history);
        Pair vc = make(kv_dtype, c.layers * c.capacity, width, width, 0, v_history);
        // An FP8 cache's scales (model/kv_fp8.h), with history too; unused otherwise.
        const std::vector<float> scale_history = random(rng_, c.layers * c.capacity * c.kv_heads);
        Pair ks =
            make(DType::kF32, c.layers * c.capacity, c.kv_heads, c.kv_heads, 0, scale_history);
        Pair vs =
            make(DType::kF32, c.layers * c.capacity, c.kv_heads, c.kv_heads, 0, scale_history);
        auto with_scales = [&](KvCacheView view, Pair& k_scale, Pair& v_scale, bool device) {
          if (fp8) {
            view.k_scale = device ? k_scale.device_view() : k_scale.host_view();
            view.v_scale = device ? v_scale.device_view() : v_scale.host_view();
          }
          return view;
        };
        auto cache = [&](bool device) {
          return with_scales(KvCacheView{c.layers, c.capacity, c.kv_heads, c.d,
                                         device ? kc.device_view() : kc.host_view(),
                                         device ? vc.device_view() : vc.host_view()},
                             ks, vs, device);
        };
        // q, k with rope; k, v stored at the positions of layer 1; attention over layer 1.
        const std::vector<float> q_values = random(rng_, T * (c.heads * c.d + 4));
        const std::vector<float> k_values = random(rng_, T * (width + 2));
        Pair q = make(DType::kF32, T, c.heads * c.d, c.heads * c.d + 4, 0, q_values);
        Pair k = make(DType::kF32, T, width, width + 2, 0, k_values);
        Pair v = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
        // The same inputs through the fused rope_store_kv (one kernel on CUDA).
        Pair fq = make(DType::kF32, T, c.heads * c.d, c.heads * c.d + 4, 0, q_values);
        Pair fk = make(DType::kF32, T, width, width + 2, 0, k_values);
        Pair fkc = make(kv_dtype, c.layers * c.capacity, width, width, 0, history);
        Pair fvc = make(kv_dtype, c.layers * c.capacity, width, width, 0, v_history);
        Pair fks =
            make(DType::kF32, c.layers * c.capacity, c.kv_heads, c.kv_heads, 0, scale_history);
        Pair fvs =
            make(DType::kF32, c.layers * c.capacity, c.kv_heads, c.kv_heads, 0, scale_history);
        const KvCacheView fused_cache =
            with_scales(KvCacheView{c.layers, c.capacity, c.kv_heads, c.d, fkc.device_view(),
                                    fvc.device_view()},
                        fks, fvs, true);
        ASSERT_TRUE(gpu_->rope_store_kv(fq.device_view(), fk.device_view(), v.device_view(), c.d,
                                        pos.device_view(), device_table, fused_cache, 1)
                        .ok());
        for (Pair* p : {&q, &k}) {
          ASSERT_TRUE(cpu_->rope(p->host_view(), c.d, pos.host_view(), host_table).ok());
          ASSERT_TRUE(gpu_->rope(p->device_view(), c.d, pos.device_view(), device_table).ok());
        }
        expect_same_bytes(q, "rope q " + what);
        expect_same_bytes(k, "rope k " + what);
        ASSERT_TRUE(
            cpu_->store_kv(k.host_view(), v.host_view(), pos.host_view(), cache(false), 1).ok());
        ASSERT_TRUE(
            gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1).ok());
        expect_same_bytes(kc, "store_kv keys " + what);
        expect_same_bytes(vc, "store_kv values " + what);
        expect_same_bytes(ks, "store_kv key scales " + what);
        expect_same_bytes(vs, "store_kv value scales " + what);
        // The fused pass: the CPU's three operations' bytes exactly.
        EXPECT_TRUE(device_bytes(fq) == q.host) << "rope_store_kv q " << what;
        EXPECT_TRUE(device_bytes(fk) == k.host) << "rope_store_kv k " << what;
        EXPECT_TRUE(device_bytes(fkc) == kc.host) << "rope_store_kv keys " << what;
        EXPECT_TRUE(device_bytes(fvc) == vc.host) << "rope_store_kv values " << what;
        EXPECT_TRUE(device_bytes(fks) == ks.host) << "rope_store_kv key scales " << what;
        EXPECT_TRUE(device_bytes(fvs) == vs.host) << "rope_store_kv value scales " << what;
        // Both CUDA kernels: the grouped one (a block per kv head; where the rows are whole
        // 16-byte vectors, not d 66) and the per-head one (cuda_ops.cc grouped_attention). A
        // single decode row also as a decode forward declares it (settled_history: the grouped
        // kernel requests every key but the newest, which store_kv just wrote, before its wait):
        // the same bytes as without.
        for (const char* grouped : {"1", "0"}) {
          ScopedEnv mode("QLINEAR_CUDA_ATTENTION_GROUPED", grouped);
          for (DType out_dtype : {DType::kF32, DType::kBF16}) {
            Pair out = make(out_dtype, T, c.heads * c.d, c.heads * c.d + 8, 0, {NAN});
            const AttentionShape shape{c.heads, c.kv_heads, c.d, window};
            ASSERT_TRUE(cpu_->attention(q.host_view(), pos.host_view(), cache(false), 1, shape,
                                        out.host_view())
                            .ok());
            ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1, shape,
                                        out.device_view())
                            .ok());
            expect_close(device_floats(out), host_floats(out),
                         out_dtype == DType::kF32 ? 2e-5 : 1e-2,
                         "attention (grouped " + std::string(grouped) + ") to " +
                             std::string(dtype_name(out_dtype)) + " " + what);
            if (T != 1) continue;
            const std::vector<std::byte> waited = device_bytes(out);
            // Rewrite the newest key and value (the same bytes) so the kernel just before the
            // attention is the one that wrote them, as in a decode step.
            ASSERT_TRUE(
                gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1)
                    .ok());
            Pair settled_out = make(out_dtype, T, c.heads * c.d, c.heads * c.d + 8, 0, {NAN});
            AttentionShape settled = shape;
            settled.settled_history = true;
            ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1, settled,
                                        settled_out.device_view())
                            .ok());
            EXPECT_TRUE(device_bytes(settled_out) == waited)
                << "attention (grouped " << grouped << ", settled history) to "
                << dtype_name(out_dtype) << " " << what;
          }
        }
      }
    }
  }
}

// A cache of three sequences, one row per sequence (batched decode): store_kv, the fused
// rope_store_kv and attention
// against the CPU ops (which cpu_ops_test checks against a double reference), f32 and bf16 caches.
TEST_F(CudaOpsTest, CacheSequencesMatchTheCpuOps) {
  const int64_t heads = 8, kv_heads = 2, d = 64, capacity = 96, layers = 2, sequences = 3, T = 3;
  const int64_t width = kv_heads * d, rows = layers * sequences * capacity;
  Pair pos = make(DType::kI32, 1, T, T, 0, {70, 12, 95});
  for (DType kv_dtype : {DType::kF32, DType::kBF16}) {
    const std::string what(dtype_name(kv_dtype));
    const std::vector<float> history = random(rng_, rows * width);
    const std::vector<float> v_history = random(rng_, rows * width);
    Pair kc = make(kv_dtype, rows, width, width, 0, history);
    Pair vc = make(kv_dtype, rows, width, width, 0, v_history);
    auto cache = [&](bool device) {
      return KvCacheView{layers,
                         capacity,
                         kv_heads,
                         d,
                         device ? kc.device_view() : kc.host_view(),
                         device ? vc.device_view() : vc.host_view(),
                         sequences,
                         0,
                         1};
    };
    Pair k = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
    Pair v = make(DType::kF32, T, width, width, 0, random(rng_, T * width));
    ASSERT_TRUE(
        cpu_->store_kv(k.host_view(), v.host_view(), pos.host_view(), cache(false), 1).ok());
    ASSERT_TRUE(
        gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1).ok());
    expect_same_bytes(kc, "store_kv keys " + what);
    expect_same_bytes(vc, "store_kv values " + what);
    {
      // The fused pass into a fresh copy of the caches: the CPU's rope + store_kv bytes.
      const int64_t half = d / 2;
      Pair cos_t = make(DType::kF32, capacity, half, half, 0, random(rng_, capacity * half));
      Pair sin_t = make(DType::kF32, capacity, half, half, 0, random(rng_, capacity * half));
      const RopeTable host_table{capacity, half, cos_t.host_view(), sin_t.host_view()};
      const RopeTable device_table{capacity, half, cos_t.device_view(), sin_t.device_view()};
      const std::vector<float> qv = random(rng_, T * heads * d), kv = random(rng_, T * width);
      Pair q1 = make(DType::kF32, T, heads * d, heads * d, 0, qv);
      Pair k1 = make(DType::kF32, T, width, width, 0, kv);
      Pair kc1 = make(kv_dtype, rows, width, width, 0, history);
      Pair vc1 = make(kv_dtype, rows, width, width, 0, v_history);
      KvCacheView c1{layers,          capacity,  kv_heads, d, kc1.host_view(),
                     vc1.host_view(), sequences, 0,        1};
      ASSERT_TRUE(cpu_->rope_store_kv(q1.host_view(), k1.host_view(), v.host_view(), d,
                                      pos.host_view(), host_table, c1, 1)
                      .ok());
      c1.k = kc1.device_view();
      c1.v = vc1.device_view();
      ASSERT_TRUE(gpu_->rope_store_kv(q1.device_view(), k1.device_view(), v.device_view(), d,
                                      pos.device_view(), device_table, c1, 1)
                      .ok());
      expect_same_bytes(q1, "rope_store_kv q " + what);
      expect_same_bytes(kc1, "rope_store_kv keys " + what);
      expect_same_bytes(vc1, "rope_store_kv values " + what);
    }
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
    // As the decode forward declares it (one row per sequence, every key but each row's newest
    // written before the store_kv just before: settled_history): the CPU ops' result too.
    Pair settled_out = make(DType::kF32, T, heads * d, heads * d, 0, {NAN});
    AttentionShape settled = shape;
    settled.settled_history = true;
    ASSERT_TRUE(
        gpu_->store_kv(k.device_view(), v.device_view(), pos.host_view(), cache(true), 1).ok());
    ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1, settled,
                                settled_out.device_view())
                    .ok());
    expect_close(device_floats(settled_out), host_floats(out), 2e-5,
                 "attention, settled history, " + what);
  }
}

// The tensor-core attention (decoder_attention_mma.cu, tiles of 64 query rows) against the CPU
// ops over bf16 caches: prompt chunks over earlier history, several tiles and a partial one,
// GQA, head dims 32 / 64 / 128, windows, two sequences in one call (rows_per_sequence), a row
// whose device position is past the cache (NaN, as the other kernels), and windows that leave a
// gap of NaN cache rows that no row reads (they must not reach any output as 0 * NaN).
// QLINEAR_CUDA_ATTENTION_MMA=require makes a call that the kernel does not take an error, so the
// comparison cannot pass on another kernel.
TEST_F(CudaOpsTest, TensorCoreAttentionMatchesTheCpuOps) {
  auto run = [](int from, int count) {
    std::vector<float> p;
    for (int i = 0; i < count; ++i) p.push_back(static_cast<float>(from + i));
    return p;
  };
  auto join = [](std::vector<float> a, const std::vector<float>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  struct Case {
    std::string name;
    int64_t heads, kv_heads, d, capacity, sequences, rows_per_sequence;
    std::vector<float> positions;
    std::vector<int64_t> windows;
    int64_t poison_from = 0, poison_to = 0;  // cache rows of layer 1 set to NaN
    int64_t outside_row = -1;                // a row whose device position is past the cache
  };
  const std::vector<Case> cases = {
      {"200 rows over 100 of history, d 128", 8, 2, 128, 400, 1, 0, run(100, 200), {0, 100}},
      {"130 rows from 0, d 64", 4, 1, 64, 200, 1, 0, run(0, 130), {0, 5}},
      {"101 rows, d 32, groups of 2", 6, 3, 32, 300, 1, 0, run(37, 101), {0, 5, 100}},
      {"two sequences of 70 rows", 8, 2, 64, 128, 2, 70, join(run(0, 70), run(10, 70)), {0, 33}},
      {"windows with a gap of NaN rows",
       4,
       2,
       64,
       300,
       1,
       0,
       join(join(run(0, 10), run(150, 100)), {1000}),
       {5},
       10,
       145,
       110}};
  const int64_t layers = 2;
  for (const Case& c : cases) {
    const int64_t width = c.kv_heads * c.d;
    const int64_t cache_rows = layers * c.sequences * c.capacity;
    const auto T = static_cast<int64_t>(c.positions.size());
    std::vector<float> k_values = random(rng_, cache_rows * width);
    std::vector<float> v_values = random(rng_, cache_rows * width);
    // Layer 1 of the first sequence starts at cache row c.sequences * c.capacity.
    for (int64_t r = c.poison_from; r < c.poison_to; ++r) {
      for (int64_t i = 0; i < width; ++i) {
        k_values[(c.sequences * c.capacity + r) * width + i] = NAN;
        v_values[(c.sequences * c.capacity + r) * width + i] = NAN;
      }
    }
    Pair kc = make(DType::kBF16, cache_rows, width, width, 0, k_values);
    Pair vc = make(DType::kBF16, cache_rows, width, width, 0, v_values);
    auto cache = [&](bool device) {
      return KvCacheView{layers,
                         c.capacity,
                         c.kv_heads,
                         c.d,
                         device ? kc.device_view() : kc.host_view(),
                         device ? vc.device_view() : vc.host_view(),
                         c.sequences,
                         0,
                         c.rows_per_sequence};
    };
    // The CPU ops refuse a position past the cache: they get a valid one for that row, whose
    // output is then not compared.
    std::vector<float> host_positions = c.positions;
    if (c.outside_row >= 0) host_positions[static_cast<std::size_t>(c.outside_row)] = 5;
    Pair pos = make(DType::kI32, 1, T, T, 0, c.positions);
    Pair host_pos = make(DType::kI32, 1, T, T, 0, host_positions);
    Pair q = make(DType::kF32, T, c.heads * c.d, c.heads * c.d + 4, 0,
                  random(rng_, T * (c.heads * c.d + 4)));
    for (int64_t window : c.windows) {
      const AttentionShape shape{c.heads, c.kv_heads, c.d, window};
      for (DType out_dtype : {DType::kF32, DType::kBF16}) {
        const std::string what = c.name + ", window " + std::to_string(window) + ", to " +
                                 std::string(dtype_name(out_dtype));
        Pair out = make(out_dtype, T, c.heads * c.d, c.heads * c.d + 8, 0, {NAN});
        ASSERT_TRUE(cpu_->attention(q.host_view(), host_pos.host_view(), cache(false), 1, shape,
                                    out.host_view())
                        .ok());
        {
          ScopedEnv mode("QLINEAR_CUDA_ATTENTION_MMA", "require");
          const Status s = gpu_->attention(q.device_view(), pos.device_view(), cache(true), 1,
                                           shape, out.device_view());
          ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
        }
        std::vector<float> got = device_floats(out);
        std::vector<float> want = host_floats(out);
        if (c.outside_row >= 0) {
          const auto first = static_cast<std::size_t>(c.outside_row * c.heads * c.d);
          for (std::size_t i = first; i < first + static_cast<std::size_t>(c.heads * c.d); ++i) {
            EXPECT_TRUE(std::isnan(got[i])) << what << ": element " << i << " is " << got[i];
            got[i] = want[i] = 0.0f;
          }
        }
        expect_close(got, want, out_dtype == DType::kF32 ? 2e-5 : 1e-2,
                     "tensor-core attention, " + what);
      }
    }
  }
}

// Device indices cannot be checked without a wait: the kernels write NaN rows (embed, attention)
// or nothing (rope, store_kv) for an out-of-range one, and never touch memory outside the views.
TEST_F(CudaOpsTest, OutOfRangeDeviceIndicesWriteNanOrNothing) {
  Pair table = make(DType::kBF16, 4, 8, 8, 0, random(rng_, 32));
  Pair ids = make(DType::kI32, 1, 3, 3, 0, {1, 4, -1});
  Pair out = make(DType::kF32, 3, 8, 8, 0, {0.0f});
  ASSERT_TRUE(gpu_->embed(table.device_view(), ids.device_view(), out.device_view()).ok());
  const std::vector<float> rows = device_floats(out);
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(rows[static_cast<std::size_t>(i)],
              load_as_f32(table.host.data(), DType::kBF16, static_cast<std::size_t>(8 + i)));
    EXPECT_TRUE(std::isnan(rows[static_cast<std::size_t>(8 + i)]));
    EXPECT_TRUE(std::isnan(rows[static_cast<std::size_t>(16 + i)]));
  }

  const int64_t d = 8, capacity = 4;
  Pair cos_t = make(DType::kF32, capacity, d / 2, d / 2, 0, {0.5f});
  Pair sin_t = make(DType::kF32, capacity, d / 2, d / 2, 0, {0.25f});
  const RopeTable table_view{capacity, d / 2, cos_t.device_view(), sin_t.device_view()};
  Pair pos = make(DType::kI32, 1, 2, 2, 0, {1, 9});
  Pair x = make(DType::kF32, 2, d, d, 0, random(rng_, 2 * d));
  const std::vector<float> before = host_floats(x);
  ASSERT_TRUE(gpu_->rope(x.device_view(), d, pos.device_view(), table_view).ok());
  const std::vector<float> after = device_floats(x);
  for (int64_t i = 0; i < d; ++i) {
    EXPECT_EQ(after[static_cast<std::size_t>(d + i)], before[static_cast<std::size_t>(d + i)])
        << "rope wrote a row of an out-of-range position";
  }
  Pair kc = make(DType::kBF16, capacity, d, d, 0, {0.0f});
  Pair vc = make(DType::kBF16, capacity, d, d, 0, {0.0f});
  const KvCacheView cache{1, capacity, 1, d, kc.device_view(), vc.device_view()};
  ASSERT_TRUE(gpu_->store_kv(x.device_view(), x.device_view(), pos.device_view(), cache, 0).ok());
  const std::vector<float> stored = device_floats(kc);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    if (i / d != 1) {
      EXPECT_EQ(stored[i], 0.0f) << "store_kv wrote cache row " << i / d;
    }
  }
  // The fused pass: the out-of-range row neither rotated nor stored.
  Pair fq = make(DType::kF32, 2, d, d, 0, before);
  Pair fk = make(DType::kF32, 2, d, d, 0, before);
  Pair fv = make(DType::kF32, 2, d, d, 0, before);
  Pair fkc = make(DType::kBF16, capacity, d, d, 0, {0.0f});
  Pair fvc = make(DType::kBF16, capacity, d, d, 0, {0.0f});
  const KvCacheView fused_cache{1, capacity, 1, d, fkc.device_view(), fvc.device_view()};
  ASSERT_TRUE(gpu_->rope_store_kv(fq.device_view(), fk.device_view(), fv.device_view(), d,
                                  pos.device_view(), table_view, fused_cache, 0)
                  .ok());
  for (Pair* p : {&fq, &fk}) {
    const std::vector<float> got = device_floats(*p);
    for (int64_t i = 0; i < d; ++i) {
      EXPECT_EQ(got[static_cast<std::size_t>(d + i)], before[static_cast<std::size_t>(d + i)])
          << "rope_store_kv rotated a row of an out-of-range position";
    }
  }
  for (Pair* p : {&fkc, &fvc}) {
    const std::vector<float> got = device_floats(*p);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (i / d != 1) {
        EXPECT_EQ(got[i], 0.0f) << "rope_store_kv wrote cache row " << i / d;
      }
    }
  }
  Pair attn = make(DType::kF32, 2, 2 * d, 2 * d, 0, {0.0f});
  Pair q = make(DType::kF32, 2, 2 * d, 2 * d, 0, random(rng_, 4 * d));
  ASSERT_TRUE(gpu_->attention(q.device_view(), pos.device_view(), cache, 0,
                              AttentionShape{2, 1, d, 0}, attn.device_view())
                  .ok());
  const std::vector<float> a = device_floats(attn);
  for (int64_t i = 0; i < 2 * d; ++i) {
    EXPECT_FALSE(std::isnan(a[static_cast<std::size_t>(i)]));
    EXPECT_TRUE(std::isnan(a[static_cast<std::size_t>(2 * d + i)]));
  }
}

// The greedy ids of rows whose answers are known by construction (argmax_rows.h: ties across the
// kernel's threads and passes, NaN, rows without a value above -inf, padding that would win), the
// logits at an offset with a leading dimension; the CPU ops pick the same.
TEST_F(CudaOpsTest, ArgmaxIsTheFirstMaximumNanNeverWinning) {
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

// Rows for the sampler: peaked (a few logits far above a normal bulk, as a language model's),
// flat (top-p and the draw reach far into the order), coarse (many exact ties, +-0), and rows
// with NaN, -inf and +inf.
std::vector<float> sampling_rows(std::mt19937& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> any(0, cols - 1);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    float* row = v.data() + r * cols;
    const int kind = static_cast<int>(r % 5);
    for (int64_t i = 0; i < cols; ++i) {
      const float x = normal(rng);
      row[i] = kind == 0   ? 2.0f * x
               : kind == 1 ? 0.3f * x
               : kind == 2 ? std::round(2.0f * x) * 0.5f  // ties, and -0 next to +0
                           : 1.5f * x;
    }
    if (kind == 0 || kind == 4) {  // 0: the spikes hold nearly all the mass at T <= 1
      for (int s = 0; s < 12; ++s) row[any(rng)] = (kind == 0 ? 20.0f : 9.0f) + normal(rng);
    }
    if (kind == 3) {
      for (int s = 0; s < 40; ++s) row[any(rng)] = std::numeric_limits<float>::quiet_NaN();
      for (int s = 0; s < 40; ++s) row[any(rng)] = -std::numeric_limits<float>::infinity();
    }
    if (kind == 4 && r % 10 == 9) row[any(rng)] = std::numeric_limits<float>::infinity();
  }
  return v;
}

// The device sampler (decoder_sample.cu) picks sample_token's ids (model/sampler.h, the host
// definition) for every option set, draw and kind of row, vocabularies below and above the
// candidates it orders (4096) up to Qwen's; -1 (left to the host) only where the candidates
// outnumber those it orders, never for a peaked row at T <= 1. The logits are not modified.
TEST_F(CudaOpsTest, SampleIsSampleToken) {
  std::vector<SamplingOptions> sets;
  const auto add = [&](double t, int k, double p, double min_p, double penalty) {
    SamplingOptions o;
    o.temperature = t;
    o.top_k = k;
    o.top_p = p;
    o.min_p = min_p;
    o.repetition_penalty = penalty;
    o.seed = 1000 + sets.size();
    sets.push_back(o);
  };
  add(1.0, 0, 1.0, 0.0, 1.0);     // the whole row
  add(0.7, 0, 0.9, 0.0, 1.0);     // top-p
  add(1.0, 40, 1.0, 0.0, 1.0);    // top-k
  add(0.8, 50, 0.95, 0.05, 1.3);  // all of them
  add(1.2, 5000, 0.8, 0.0, 1.0);  // a top-k beyond the ordered candidates
  add(1.0, 0, 1.0, 0.1, 1.0);     // min-p
  add(2.0, 0, 1.0, 0.001, 1.0);   // min-p keeping thousands
  add(0.0, 0, 1.0, 0.0, 1.7);     // greedy of the penalized row
  add(0.5, 3, 1.0, 0.0, 0.6);     // a penalty < 1
  add(3.0, 0, 0.3, 0.0, 1.0);     // a hot, flat top-p
  // Both ways to order the leading candidates: a gathered prefix (the default; radix selects
  // where it cannot), and radix selects alone.
  for (const std::string mode : {"auto", "radix"}) {
    const std::unique_ptr<ScopedEnv> env =
        mode == "radix" ? std::make_unique<ScopedEnv>("QLINEAR_SAMPLE_SELECT", "radix") : nullptr;
    for (const int64_t cols : {int64_t{50}, int64_t{700}, int64_t{20000}, int64_t{151936}}) {
      SCOPED_TRACE(mode + " " + std::to_string(cols));
      const int64_t rows = 10;
      const int64_t ld = cols + 3;
      std::vector<float> values(3, 1e30f);  // 3 elements before (0, 0)
      const std::vector<float> body = sampling_rows(rng_, rows, ld);
      values.insert(values.end(), body.begin(), body.end());
      Pair logits = make(DType::kF32, rows, cols, ld, 3, values);
      // Seen: about one id in 20, as flags for the device and as a list with repeats for the host.
      std::vector<float> flags(static_cast<std::size_t>(cols), 0.0f);
      std::vector<int32_t> seen;
      std::uniform_int_distribution<int64_t> any(0, cols - 1);
      for (int64_t s = 0; s < std::max<int64_t>(2, cols / 20); ++s) {
        const int64_t id = any(rng_);
        flags[static_cast<std::size_t>(id)] = 1.0f;
        seen.push_back(static_cast<int32_t>(id));
        if (s % 3 == 0) seen.push_back(static_cast<int32_t>(id));
      }
      Pair seen_flags = make(DType::kU8, 1, cols, cols, 0, flags);
      Pair ids = make(DType::kI32, 1, rows, rows, 0, std::vector<float>{-2.0f});
      int left_to_host = 0;
      int compared = 0;
      for (std::size_t k = 0; k < sets.size(); ++k) {
        const SamplingOptions& o = sets[k];
        const bool beyond = cols > 4096 && (o.top_k == 0 || o.top_k > 4096);
        for (uint64_t step : {uint64_t{0}, uint64_t{1}, uint64_t{77}}) {
          ASSERT_TRUE(gpu_->sample(logits.device_view(), seen_flags.device_view(), o, step,
                                   ids.device_view())
                          .ok());
          const std::vector<float> got = device_floats(ids);
          for (int64_t r = 0; r < rows; ++r) {
            const float* in = reinterpret_cast<const float*>(logits.host.data()) + 3 + r * ld;
            std::vector<float> row(in, in + cols);
            const int32_t want = sample_token(row, seen, o, step);
            const auto id = static_cast<int32_t>(got[static_cast<std::size_t>(r)]);
            // A language model's row (peaked) at T <= 1 is always decided on the device.
            const bool may_leave = beyond && !(r % 5 == 0 && o.temperature <= 1.0);
            if (id == -1 && may_leave) {
              ++left_to_host;
              continue;
            }
            ++compared;
            EXPECT_EQ(id, want) << "option set " << k << ", step " << step << ", row " << r;
          }
        }
      }
      std::cout << "[ cuda     ] sample (" << mode << "), vocabulary " << cols << ": " << compared
                << " picks equal to sample_token's, " << left_to_host << " left to the host\n";
      expect_same_bytes(logits, "logits after sample");
    }
  }
}

// A top-p draw over a flat row of 100000 logits needs far more than the ordered candidates: the
// row is left to the host (-1), never answered from a truncated order.
TEST_F(CudaOpsTest, SampleLeavesRowsPastItsCandidatesToTheHost) {
  const int64_t cols = 100000;
  std::vector<float> flat(static_cast<std::size_t>(cols));
  std::normal_distribution<float> small(0.0f, 1e-3f);
  for (float& v : flat) v = small(rng_);
  Pair logits = make(DType::kF32, 1, cols, cols, 0, flat);
  Pair ids = make(DType::kI32, 1, 1, 1, 0, std::vector<float>{-2.0f});
  SamplingOptions o;
  o.temperature = 1.0;
  o.top_p = 0.9;  // ~90000 candidates in the run
  ASSERT_TRUE(gpu_->sample(logits.device_view(), ConstMatrixView(), o, 3, ids.device_view()).ok());
  EXPECT_EQ(static_cast<int32_t>(device_floats(ids)[0]), -1);
  o.top_k = 100;  // now everything the draw can reach is ordered
  ASSERT_TRUE(gpu_->sample(logits.device_view(), ConstMatrixView(), o, 3, ids.device_view()).ok());
  std::vector<float> row = flat;
  EXPECT_EQ(static_cast<int32_t>(device_floats(ids)[0]), sample_token(row, {}, o, 3));
  // The penalty needs the flags.
  o.repetition_penalty = 1.2;
  const Status s = gpu_->sample(logits.device_view(), ConstMatrixView(), o, 3, ids.device_view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("seen must be u8 [1, 100000]"), std::string::npos) << s.message();
}

TEST_F(CudaOpsTest, BadInputsAreErrorsNamingTheValue) {
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
  Pair pos = make(DType::kI32, 1, 2, 2, 0, {0, 80});
  Pair kc = make(DType::kF32, 64, 8, 8, 0, {0.0f});
  const KvCacheView cache{1, 64, 1, 8, kc.device_view(), kc.device_view()};
  s = gpu_->store_kv(x.device_view(), x.device_view(), pos.host_view(), cache, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("position 80 does not fit the KV cache of 64"), std::string::npos)
      << s.message();
  Pair q = make(DType::kF32, 1, 1024, 1024, 0, {0.0f});
  Pair o = make(DType::kF32, 1, 1024, 1024, 0, {0.0f});
  Pair p1 = make(DType::kI32, 1, 1, 1, 0, {0});
  const KvCacheView wide{1, 64, 1, 1024, kc.device_view(), kc.device_view()};
  s = gpu_->attention(q.device_view(), p1.device_view(), wide, 0, AttentionShape{1, 1, 1024, 0},
                      o.device_view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim 1024 (at most 512)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace qlinear
