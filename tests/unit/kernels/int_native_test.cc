// The native CPU integer kernels (cpu.w4a16.*, cpu.w8a16.*, cpu.int.generic) against a scalar
// double-precision dot product over hand-packed GPTQ words: act-order permutation, ragged N,
// every group size, zero points, activation dtypes, row blocking, threading and check().
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/int_tiles.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "qlinear/device.h"
#include "qlinear/dtype.h"
#include "support/gptq_pack.h"
#include "support/kernel_run.h"

namespace qlinear {
namespace {

// Which compact form the tiles can store the scales in (TiledWeights::scales dtype).
enum class ScaleKind { kF16Exact, kBf16Exact, kF32Only };

struct Case {
  int bits = 4;
  int64_t K = 256;
  int64_t N = 64;
  int group = 64;
  bool zeros = false;
  bool act_order = false;
  bool bias = false;
  ScaleKind scale_kind = ScaleKind::kF16Exact;
};

struct Layer {
  Case c;
  std::vector<uint32_t> codes;    // [K, N]
  std::vector<uint32_t> zero;     // [G, N]
  std::vector<double> scales;     // [G, N]
  std::vector<int32_t> group_of;  // [K]
  Canonical canonical;
};

Layer make_layer(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer l;
  l.c = c;
  const int64_t G = c.K / c.group;
  const uint32_t levels = 1u << c.bits;
  std::uniform_int_distribution<uint32_t> code(0, levels - 1);
  // Scales exact in f32, so the reference sees the kernel's scales: m * 2^-10 with small m (f16
  // holds them), m * 2^17 (above f16's range, bf16 holds them), or 21-bit m * 2^-30 (only f32).
  std::uniform_int_distribution<int> mant(1, 64);
  std::uniform_int_distribution<int> wide(1 << 20, (1 << 21) - 1);
  const auto scale = [&]() {
    switch (c.scale_kind) {
      case ScaleKind::kF16Exact:
        return std::ldexp(mant(rng), -10);
      case ScaleKind::kBf16Exact:
        return std::ldexp(mant(rng), 17);
      case ScaleKind::kF32Only:
        return std::ldexp(wide(rng) | 1, -30);
    }
    return 0.0;
  };
  l.codes.resize(static_cast<size_t>(c.K * c.N));
  for (auto& v : l.codes) v = code(rng);
  l.zero.resize(static_cast<size_t>(G * c.N));
  for (auto& z : l.zero) z = c.zeros ? code(rng) : levels / 2;
  l.scales.resize(static_cast<size_t>(G * c.N));
  for (auto& s : l.scales) s = scale();
  l.group_of.resize(static_cast<size_t>(c.K));
  for (int64_t k = 0; k < c.K; ++k) l.group_of[k] = static_cast<int32_t>(k / c.group);
  if (c.act_order) std::shuffle(l.group_of.begin(), l.group_of.end(), rng);

  IntWeights w;
  w.bits = c.bits;
  w.K = c.K;
  w.N = c.N;
  w.group_size = c.group;
  w.num_groups = G;
  w.qweight = test::pack_gptq(l.codes, c.K, c.N, c.bits);
  w.scales.assign(l.scales.begin(), l.scales.end());
  if (c.zeros) w.zeros.assign(l.zero.begin(), l.zero.end());
  if (c.act_order) w.g_idx = l.group_of;
  if (c.bias) {
    for (int64_t n = 0; n < c.N; ++n) w.bias.push_back(0.25f * static_cast<float>(n % 7) - 0.5f);
  }
  l.canonical.name = "test.layer";
  l.canonical.weights = std::move(w);
  l.canonical.shard_sizes = {c.N};
  return l;
}

// Activations as `dtype` bits, and their exact f32 values.
struct Activations {
  Tensor tensor;
  std::vector<float> values;
};

Activations make_x(int64_t M, int64_t K, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Activations a{test::host_tensor(dtype, {M, K}), std::vector<float>(static_cast<size_t>(M * K))};
  for (int64_t i = 0; i < M * K; ++i) {
    const float v = dist(rng);
    if (dtype == DType::kF32) {
      a.tensor.data_as<float>()[i] = v;
      a.values[i] = v;
    } else if (dtype == DType::kBF16) {
      a.tensor.data_as<uint16_t>()[i] = f32_to_bf16(v);
      a.values[i] = bf16_to_f32(f32_to_bf16(v));
    } else {
      a.tensor.data_as<uint16_t>()[i] = f32_to_f16(v);
      a.values[i] = f16_to_f32(f32_to_f16(v));
    }
  }
  return a;
}

struct Expected {
  std::vector<double> y;      // [M, N]
  std::vector<double> bound;  // [M, N]: sum_k |x * w|, the scale of rounding errors
};

Expected scalar_reference(const Layer& l, const std::vector<float>& x, int64_t M) {
  const Case& c = l.c;
  Expected e{std::vector<double>(static_cast<size_t>(M * c.N)),
             std::vector<double>(static_cast<size_t>(M * c.N))};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < c.N; ++n) {
      double sum = 0.0;
      double mag = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const int64_t g = l.group_of[k];
        const double w =
            (static_cast<double>(l.codes[k * c.N + n]) - static_cast<double>(l.zero[g * c.N + n])) *
            l.scales[g * c.N + n];
        sum += x[m * c.K + k] * w;
        mag += std::abs(x[m * c.K + k] * w);
      }
      const auto& bias = std::get<IntWeights>(l.canonical.weights).bias;
      if (!bias.empty()) sum += bias[n];
      e.y[m * c.N + n] = sum;
      e.bound[m * c.N + n] = mag;
    }
  }
  return e;
}

const std::vector<std::string>& native_kernels() {
  static const std::vector<std::string> names = {"cpu.w4a16.avx512", "cpu.w8a16.avx512",
                                                 "cpu.w4a16.avx2", "cpu.w8a16.avx2",
                                                 "cpu.int.generic"};
  return names;
}

int kernel_bits(const std::string& name) {
  if (name.find("w4a16") != std::string::npos) return 4;
  if (name.find("w8a16") != std::string::npos) return 8;
  return 0;
}

Device host() {
  Result<Device> device = detect_device("cpu");
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  return device.ok() ? device.value() : Device{};
}

// Relative error allowed against sum |x*w|: bf16-rounded activations (avx512 with f16 input
// and M > kSplitMaxM; bf16 input is exact, f32 is split into hi + lo) or f32 accumulation.
double tolerance(const std::string& kernel, DType dtype, int64_t M) {
  // The AMX kernels take the avx512 kernels' rows.
  const bool avx512 =
      kernel.find("avx512") != std::string::npos || kernel.find(".amx") != std::string::npos;
  if (avx512 && dtype == DType::kF16 && M > int_tiles::kSplitMaxM) return std::ldexp(1.0, -8);
  return 2e-5;
}

// Runs `kernel` on `layer` and compares; skips kernels this CPU cannot run.
void expect_layer_matches(const std::string& name, const Layer& layer, int64_t M, DType dtype,
                          int threads = 0) {
  const Case& c = layer.c;
  SCOPED_TRACE(::testing::Message()
               << name << " bits=" << c.bits << " K=" << c.K << " N=" << c.N << " g=" << c.group
               << " zp=" << c.zeros << " act_order=" << c.act_order << " M=" << M
               << " x=" << dtype_name(dtype) << " scales=" << static_cast<int>(c.scale_kind));
  const LinearKernel* kernel = find_kernel(name);
  ASSERT_NE(kernel, nullptr);
  const Device device = host();
  LinearProblem problem = LinearProblem::from_canonical(layer.canonical);
  problem.act_dtype = dtype;
  // The AMX kernels take a range of M (from kAmxMinRows); the problem says which M runs.
  if (name.find(".amx") != std::string::npos) problem.m_min = problem.m_max = M;
  const Verdict verdict = kernel->check(problem, device);
  if (verdict.reason == Reason::kMissingIsa) GTEST_SKIP() << verdict.to_string();
  ASSERT_TRUE(verdict.ok()) << verdict.to_string();
  auto prepared = test::prepare_on_cpu(*kernel, layer.canonical, problem);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const Activations x = make_x(M, c.K, dtype, static_cast<uint32_t>(M * 131 + c.K));
  Result<Tensor> run = test::run_on_cpu(**prepared, x.tensor, threads);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Tensor& y = *run;
  const Expected e = scalar_reference(layer, x.values, M);
  const double rel = tolerance(name, dtype, M);
  // f32 accumulation of codes offset by up to 2176 (avx512 8-bit), relative to the sum.
  const double noise = 1e-5;
  int failures = 0;
  for (int64_t i = 0; i < M * c.N && failures < 5; ++i) {
    const double got = y.data_as<float>()[i];
    const double allowed = rel * e.bound[i] + noise * (1.0 + e.bound[i]);
    if (std::abs(got - e.y[i]) > allowed) {
      ++failures;
      ADD_FAILURE() << "y[" << i / c.N << ", " << i % c.N << "] = " << got << ", expected "
                    << e.y[i] << " (allowed error " << allowed << ")";
    }
  }
}

void expect_matches(const std::string& name, const Case& c, int64_t M, DType dtype,
                    int threads = 0) {
  expect_layer_matches(name, make_layer(c, static_cast<uint32_t>(c.K * 31 + c.N * 7 + c.group)), M,
                       dtype, threads);
}

// Rows [k0, k0 + rows) of an act-order layer, as a row-parallel TP rank holds them: the global
// g_idx of those rows and the full scale / zero tables, so groups are ragged (some rows of each
// group live on other ranks) and K need not be a multiple of the group size.
Layer act_order_rows(const Layer& full, int64_t k0, int64_t rows) {
  Layer l = full;
  l.c.K = rows;
  const int64_t N = full.c.N;
  l.codes.assign(full.codes.begin() + k0 * N, full.codes.begin() + (k0 + rows) * N);
  l.group_of.assign(full.group_of.begin() + k0, full.group_of.begin() + k0 + rows);
  auto& w = std::get<IntWeights>(l.canonical.weights);
  w.K = rows;
  w.qweight = test::pack_gptq(l.codes, rows, N, full.c.bits);
  w.g_idx = l.group_of;
  return l;
}

TEST(IntNativeTest, RaggedActOrderGroupsOfATensorParallelShard) {
  for (const std::string& name : native_kernels()) {
    for (int bits : {4, 8}) {
      if (kernel_bits(name) != 0 && kernel_bits(name) != bits) continue;
      for (bool zeros : {false, true}) {
        const Layer full = make_layer(Case{bits, 256, 72, 64, zeros, true}, 11);
        for (const auto& [k0, rows] : {std::pair<int64_t, int64_t>{0, 128}, {128, 128}, {32, 96}}) {
          const Layer shard = act_order_rows(full, k0, rows);
          for (int64_t M : {1, 5, 40}) expect_layer_matches(name, shard, M, DType::kF32);
          expect_layer_matches(name, shard, 3, DType::kBF16);
        }
      }
    }
  }
}

TEST(IntNativeTest, EveryGroupSizeWithAndWithoutZeros) {
  for (const std::string& name : native_kernels()) {
    for (int bits : {4, 8}) {
      if (kernel_bits(name) != 0 && kernel_bits(name) != bits) continue;
      for (int group : {32, 64, 128, 384}) {  // 384 = K: channelwise
        for (bool zeros : {false, true}) {
          expect_matches(name, Case{bits, 384, 64, group, zeros}, 2, DType::kF32);
        }
      }
    }
  }
}

TEST(IntNativeTest, TilesStoreScalesInTheNarrowestExactFormAndRebuildThem) {
  // f16 / bf16 / f32 chosen by exactness; group_params gives back every scale bit for bit and
  // sz = s * (z + offset) (padding columns of the last tile: zero).
  const std::pair<ScaleKind, DType> kinds[] = {{ScaleKind::kF16Exact, DType::kF16},
                                               {ScaleKind::kBf16Exact, DType::kBF16},
                                               {ScaleKind::kF32Only, DType::kF32}};
  for (const auto& [kind, store] : kinds) {
    for (bool zeros : {false, true}) {
      for (int bits : {4, 8}) {
        Case c{bits, 256, 100, 64, zeros};
        c.scale_kind = kind;
        const Layer l = make_layer(c, 7);
        const auto& w = std::get<IntWeights>(l.canonical.weights);
        const float offset = bits == 4 ? 128.0f : 2176.0f;
        auto tiled = int_tiles::tile_int_weights(w, offset, "test", l.canonical);
        ASSERT_TRUE(tiled.ok()) << tiled.status().to_string();
        EXPECT_EQ(tiled->scales.dtype(), store);
        EXPECT_EQ(tiled->tile_zeros(0) != nullptr, zeros);
        for (int64_t tile = 0; tile < tiled->tiles; ++tile) {
          for (int64_t g = 0; g < tiled->groups; ++g) {
            float s[int_tiles::kTileN];
            float sz[int_tiles::kTileN];
            tiled->group_params(tile, g, 0, int_tiles::kTileN, s, sz);
            for (int64_t col = 0; col < int_tiles::kTileN; ++col) {
              const int64_t n = tile * int_tiles::kTileN + col;
              const float want_s = n < c.N ? w.scales[g * c.N + n] : 0.0f;
              const float z = static_cast<float>(n < c.N ? l.zero[g * c.N + n] : 0);
              const float want_sz = n < c.N ? want_s * (z + offset) : 0.0f;
              ASSERT_EQ(s[col], want_s) << "tile " << tile << " group " << g << " col " << col;
              ASSERT_EQ(sz[col], want_sz) << "tile " << tile << " group " << g << " col " << col;
            }
          }
        }
      }
    }
  }
}

TEST(IntNativeTest, SplitTilePassesKeepsEveryWordOfItsColumnAndStep) {
  // After split_tile_passes, pass_q(tile, c0)[d * pass_cols + j] is the canonical word of step d
  // of column 64 * tile + c0 + j (padding columns of the last tile: 0), for every pass width the
  // kernels may ask for; the scales and zero points are not moved.
  for (int bits : {4, 8}) {
    const Case c{bits, 256, 100, 64, /*zeros=*/true};
    const Layer l = make_layer(c, 11);
    const auto& w = std::get<IntWeights>(l.canonical.weights);
    for (int64_t pass_cols : {int64_t{8}, int64_t{32}, int_tiles::kTileN}) {
      auto tiled = int_tiles::tile_int_weights(w, 0.0f, "test", l.canonical);
      ASSERT_TRUE(tiled.ok()) << tiled.status().to_string();
      const int8_t* zeros_before = reinterpret_cast<const int8_t*>(tiled->tile_zeros(1));
      int_tiles::split_tile_passes(*tiled, pass_cols);
      EXPECT_EQ(tiled->pass_cols, pass_cols);
      EXPECT_EQ(reinterpret_cast<const int8_t*>(tiled->tile_zeros(1)), zeros_before);
      for (int64_t tile = 0; tile < tiled->tiles; ++tile) {
        for (int64_t c0 = 0; c0 < int_tiles::kTileN; c0 += pass_cols) {
          const uint32_t* pass = tiled->pass_q(tile, c0);
          for (int64_t d = 0; d < tiled->steps; ++d) {
            for (int64_t j = 0; j < pass_cols; ++j) {
              const int64_t n = tile * int_tiles::kTileN + c0 + j;
              const uint32_t want = n < c.N ? w.qweight[d * c.N + n] : 0u;
              ASSERT_EQ(pass[d * pass_cols + j], want)
                  << "bits " << bits << " pass_cols " << pass_cols << " tile " << tile << " column "
                  << c0 + j << " step " << d;
            }
          }
        }
      }
    }
  }
}

TEST(IntNativeTest, EveryScaleStoreMatches) {
  // Each kernel's own loader of f16, bf16 and f32 scales with and without zero points: the
  // inline decode (M = 1, 3), the AVX2 sgemm path and the avx512 panel engine (M = 300).
  for (const std::string& name : native_kernels()) {
    const int bits = kernel_bits(name) == 0 ? 4 : kernel_bits(name);
    for (ScaleKind kind : {ScaleKind::kF16Exact, ScaleKind::kBf16Exact, ScaleKind::kF32Only}) {
      for (bool zeros : {false, true}) {
        Case c{bits, 256, 72, 64, zeros};
        c.scale_kind = kind;
        for (int64_t M : {1, 3, 300}) expect_matches(name, c, M, DType::kBF16);
      }
    }
  }
}

TEST(IntNativeTest, ActOrderPermutesRowsAndActivations) {
  for (const std::string& name : native_kernels()) {
    for (int bits : {4, 8}) {
      if (kernel_bits(name) != 0 && kernel_bits(name) != bits) continue;
      for (bool zeros : {false, true}) {
        expect_matches(name, Case{bits, 256, 80, 32, zeros, true}, 1, DType::kF32);
        expect_matches(name, Case{bits, 256, 80, 64, zeros, true, true}, 9, DType::kBF16);
      }
    }
  }
}

TEST(IntNativeTest, RaggedNAndBias) {
  for (const std::string& name : native_kernels()) {
    const int bits = kernel_bits(name) == 0 ? 4 : kernel_bits(name);
    for (int64_t N : {1, 13, 63, 65, 200}) {
      expect_matches(name, Case{bits, 128, N, 128, true, false, true}, 3, DType::kF32);
    }
  }
}

TEST(IntNativeTest, RowBlocksAndChunks) {
  // Every remainder of the 6-row (avx512) and 2-row (avx2) blocks, the hi/lo split limit, and
  // more rows than one job's chunk of 96.
  for (const std::string& name : native_kernels()) {
    const int bits = kernel_bits(name) == 0 ? 8 : kernel_bits(name);
    for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 11, 100}) {
      expect_matches(name, Case{bits, 128, 72, 64, false}, M, DType::kF32);
    }
  }
}

TEST(IntNativeTest, ActivationDtypes) {
  for (const std::string& name : native_kernels()) {
    const int bits = kernel_bits(name) == 0 ? 4 : kernel_bits(name);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (int64_t M : {1, 8}) {
        expect_matches(name, Case{bits, 256, 64, 128, true}, M, dtype);
      }
    }
  }
}

// The first M (+ extra) at which a kernel runs its panel engine. avx512: R activation rows are
// M, or 2M for f32 (hi + lo); f16 is split only at M <= kSplitMaxM, far below the thresholds.
// avx2: M rows of f32.
int64_t panel_m(const std::string& name, DType dtype, int64_t extra) {
  if (name.find("avx2") != std::string::npos) return int_tiles::kAvx2PanelMinRows + extra;
  const int64_t rows =
      kernel_bits(name) == 4 ? int_tiles::kPanelMinRows4 : int_tiles::kPanelMinRows8;
  return (dtype == DType::kF32 ? (rows + 1) / 2 : rows) + extra;
}

TEST(IntNativeTest, PanelEngineMatchesAcrossLayouts) {
  // The avx512 and avx2 panel engines: every group size (one K chunk holding several groups, a
  // group spanning chunks, channelwise with a K that is not whole chunks), zeros, act-order,
  // bias, ragged N, every activation dtype and row counts that leave every remainder of the
  // 6-row block and need several jobs per tile.
  for (const std::string& name : {std::string("cpu.w4a16.avx512"), std::string("cpu.w8a16.avx512"),
                                  std::string("cpu.w4a16.avx2"), std::string("cpu.w8a16.avx2")}) {
    const int bits = kernel_bits(name);
    // {group, K}: 264 = K is channelwise with a K that is not whole 128-row chunks.
    for (const auto& [group, K] :
         {std::pair<int, int64_t>{32, 288}, {64, 320}, {96, 288}, {128, 384}, {264, 264}}) {
      for (bool zeros : {false, true}) {
        expect_matches(name, Case{bits, K, 136, group, zeros}, panel_m(name, DType::kBF16, 5),
                       DType::kBF16);
      }
    }
    for (bool act_order : {false, true}) {
      expect_matches(name, Case{bits, 512, 200, 64, true, act_order, true},
                     panel_m(name, DType::kF32, 3), DType::kF32);
      expect_matches(name, Case{bits, 512, 200, 128, false, act_order, true},
                     panel_m(name, DType::kF16, 1), DType::kF16);
    }
    for (int64_t extra : {0, 1, 2, 3, 4, 5, 97}) {
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
        expect_matches(name, Case{bits, 256, 72, 128, true, false, extra % 2 == 1},
                       panel_m(name, dtype, extra), dtype);
      }
    }
    const int64_t M = panel_m(name, DType::kBF16, 0);
    expect_matches(name, Case{bits, 2048, 64, 2048, true}, M, DType::kBF16, 1);
    expect_matches(name, Case{bits, 2048, 64, 2048, true}, M, DType::kBF16, 2);
  }
}

TEST(IntNativeTest, AmxEngineMatchesAcrossLayouts) {
  // The AMX kernels (skipped where the CPU or the OS does not give AMX): group sizes of one, two
  // and four 32-row tile steps, a group spanning 128-row chunks, channelwise; zeros, act-order,
  // bias, ragged N, every activation dtype and scale store, and row counts that leave every kind
  // of partial 16-row block and need several jobs per tile.
  for (const std::string& name : {std::string("cpu.w4a16.amx"), std::string("cpu.w8a16.amx")}) {
    const int bits = kernel_bits(name);
    for (const auto& [group, K] : {std::pair<int, int64_t>{32, 288},
                                   {64, 320},
                                   {96, 288},
                                   {128, 384},
                                   {256, 512},
                                   {288, 288}}) {
      for (bool zeros : {false, true}) {
        for (int64_t M : {16, 23}) {
          expect_matches(name, Case{bits, K, 136, group, zeros}, M, DType::kBF16);
        }
      }
    }
    for (bool act_order : {false, true}) {
      expect_matches(name, Case{bits, 512, 200, 64, true, act_order, true}, 17, DType::kF32);
      expect_matches(name, Case{bits, 512, 200, 128, false, act_order, true}, 40, DType::kF16);
    }
    for (int64_t M : {16, 17, 31, 32, 33, 47, 200}) {
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
        expect_matches(name, Case{bits, 256, 72, 128, true, false, M % 2 == 1}, M, dtype);
      }
    }
    for (ScaleKind scales : {ScaleKind::kBf16Exact, ScaleKind::kF32Only}) {
      expect_matches(name, Case{bits, 256, 64, 64, true, false, false, scales}, 20, DType::kBF16);
    }
    expect_matches(name, Case{bits, 2048, 64, 2048, true}, 48, DType::kBF16, 1);
    expect_matches(name, Case{bits, 2048, 64, 2048, true}, 48, DType::kBF16, 2);
  }
}

TEST(IntNativeTest, ThreadCountsAgreeAndNestedCallsRun) {
  for (const std::string& name : native_kernels()) {
    const int bits = kernel_bits(name) == 0 ? 4 : kernel_bits(name);
    expect_matches(name, Case{bits, 128, 256, 32, true}, 2, DType::kF32, 1);
    expect_matches(name, Case{bits, 128, 256, 32, true}, 2, DType::kF32, 2);
  }
  // Called from inside a parallel region (several layers at once): runs single-threaded.
  const LinearKernel* kernel = find_kernel("cpu.int.generic");
  ASSERT_NE(kernel, nullptr);
  const Layer layer = make_layer(Case{4, 64, 64, 32, false}, 7);
  LinearProblem problem = LinearProblem::from_canonical(layer.canonical);
  problem.act_dtype = DType::kF32;
  auto prepared = test::prepare_on_cpu(*kernel, layer.canonical, problem);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const Activations x = make_x(1, 64, DType::kF32, 3);
  const Expected e = scalar_reference(layer, x.values, 1);
  std::vector<Tensor> outputs;
  std::vector<Tensor> workspaces;  // one per caller: the thread-safety rule of qlinear/linear.h
  for (int i = 0; i < 2; ++i) {
    outputs.push_back(test::host_tensor(DType::kF32, Shape{1, 64}));
    workspaces.push_back(
        test::host_tensor(DType::kU8, {static_cast<int64_t>((*prepared)->workspace_bytes(1))}));
  }
  int failed = 0;
#pragma omp parallel for num_threads(2) reduction(+ : failed)
  for (int i = 0; i < 2; ++i) {
    ExecContext ctx;
    ctx.workspace = {workspaces[i].data(), workspaces[i].nbytes(), Location::host()};
    if (!(*prepared)->run(x.tensor.matrix(), outputs[i].matrix(), ctx).ok()) ++failed;
  }
  EXPECT_EQ(failed, 0);
  for (const Tensor& y : outputs) {
    for (int64_t n = 0; n < 64; ++n) EXPECT_NEAR(y.data_as<float>()[n], e.y[n], 1e-4);
  }
}

TEST(IntNativeTest, UnevenActOrderGroupsAreAnErrorAtPrepare) {
  const LinearKernel* kernel = find_kernel("cpu.int.generic");
  ASSERT_NE(kernel, nullptr);
  Layer layer = make_layer(Case{4, 64, 16, 32, false, true}, 5);
  auto& w = std::get<IntWeights>(layer.canonical.weights);
  // Group 0 gets 33 rows, group 1 gets 31.
  const auto it = std::find(w.g_idx.begin(), w.g_idx.end(), 1);
  ASSERT_NE(it, w.g_idx.end());
  *it = 0;
  const LinearProblem problem = LinearProblem::from_canonical(layer.canonical);
  auto prepared = test::prepare_on_cpu(*kernel, layer.canonical, problem);
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.status().message().find("group_size=32"), std::string::npos)
      << prepared.status().message();
  EXPECT_NE(prepared.status().message().find("test.layer"), std::string::npos);
}

TEST(IntNativeTest, CheckRejectsWithCatalogueReasons) {
  const Layer layer = make_layer(Case{4, 256, 64, 128, false}, 1);
  const LinearProblem problem = LinearProblem::from_canonical(layer.canonical);
  Result<Device> avx2 = simulate_target("cpu:avx2");
  Result<Device> generic = simulate_target("cpu:generic");
  Result<Device> avx512 = simulate_target("cpu:avx512");
  ASSERT_TRUE(avx2.ok() && generic.ok() && avx512.ok());
  const LinearKernel* w4_512 = find_kernel("cpu.w4a16.avx512");
  const LinearKernel* w4_2 = find_kernel("cpu.w4a16.avx2");
  const LinearKernel* gen = find_kernel("cpu.int.generic");
  ASSERT_TRUE(w4_512 != nullptr && w4_2 != nullptr && gen != nullptr);

  Verdict v = w4_512->check(problem, avx2.value());
  EXPECT_EQ(v.reason, Reason::kMissingIsa);
  EXPECT_NE(v.detail.find("needs avx512"), std::string::npos) << v.detail;
  EXPECT_EQ(w4_512->check(problem, generic.value()).reason, Reason::kMissingIsa);
  EXPECT_EQ(w4_2->check(problem, generic.value()).reason, Reason::kMissingIsa);
  EXPECT_TRUE(w4_2->check(problem, avx2.value()).ok());
  EXPECT_TRUE(w4_512->check(problem, avx512.value()).ok());
  EXPECT_TRUE(gen->check(problem, generic.value()).ok());

  LinearProblem eight = problem;
  eight.bits = 8;
  EXPECT_EQ(w4_512->check(eight, avx512.value()).reason, Reason::kBits);
  LinearProblem two = problem;
  two.bits = 2;
  EXPECT_EQ(gen->check(two, generic.value()).reason, Reason::kBits);
  LinearProblem odd_group = problem;
  odd_group.group_size = 12;  // not whole packed words
  v = w4_512->check(odd_group, avx512.value());
  EXPECT_EQ(v.reason, Reason::kGroupSize);
  EXPECT_NE(v.detail.find("group_size=12"), std::string::npos) << v.detail;
  LinearProblem fp8 = problem;
  fp8.scheme = WeightScheme::kFp8;
  EXPECT_EQ(gen->check(fp8, generic.value()).reason, Reason::kScheme);

  // The AMX kernel: needs AMX beside AVX-512, whole 32-row tile steps per group, M >= 16.
  Result<Device> amx = simulate_target("cpu:amx");
  ASSERT_TRUE(amx.ok());
  const LinearKernel* w4_amx = find_kernel("cpu.w4a16.amx");
  ASSERT_NE(w4_amx, nullptr);
  LinearProblem prefill = problem;
  prefill.m_min = int_tiles::kAmxMinRows;
  prefill.m_max = 4096;
  EXPECT_TRUE(w4_amx->check(prefill, amx.value()).ok());
  v = w4_amx->check(prefill, avx512.value());
  EXPECT_EQ(v.reason, Reason::kMissingIsa);
  EXPECT_NE(v.detail.find("amx"), std::string::npos) << v.detail;
  EXPECT_EQ(w4_amx->check(prefill, avx2.value()).reason, Reason::kMissingIsa);
  LinearProblem decode = prefill;
  decode.m_min = 1;
  decode.m_max = int_tiles::kAmxMinRows - 1;
  EXPECT_EQ(w4_amx->check(decode, amx.value()).reason, Reason::kMRange);
  LinearProblem group96 = prefill;
  group96.group_size = 96;  // three tile steps: accepted
  group96.K = 288;
  EXPECT_TRUE(w4_amx->check(group96, amx.value()).ok());
  LinearProblem group48 = prefill;
  group48.group_size = 48;  // six packed words, one and a half tile steps
  group48.K = 288;
  v = w4_amx->check(group48, amx.value());
  EXPECT_EQ(v.reason, Reason::kGroupSize);
  EXPECT_NE(v.detail.find("group_size=48"), std::string::npos) << v.detail;
  EXPECT_TRUE(w4_512->check(group48, avx512.value()).ok());  // the avx512 kernel takes it
  EXPECT_EQ(w4_amx->check(eight, amx.value()).reason, Reason::kBits);
}

}  // namespace
}  // namespace qlinear
