// The bench driver's parsing, byte accounting and a tiny end-to-end run (the numbers themselves
// are machine-dependent; only their relations are checked).
#include "bench/bench_driver.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace qlinear::bench {
namespace {

std::string scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(QLINEAR_TEST_TMPDIR) / "bench_tests";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(BenchDriver, ParsesShapes) {
  auto shape = parse_shape("4096x14336");
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->K, 4096);
  EXPECT_EQ(shape->N, 14336);
  for (const char* bad : {"4096", "4096x", "x5", "0x5", "4096x14336x2", "ax5"}) {
    auto r = parse_shape(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(BenchDriver, ReadsTheShapesFileWithCommentsAndRejectsBadLines) {
  const std::string good = scratch("good_shapes.txt");
  std::ofstream(good) << "# comment\n4096 6144   llama.qkv\n\n  1536 2048 # trailing\n";
  auto shapes = read_shapes(good);
  ASSERT_TRUE(shapes.ok()) << shapes.status().to_string();
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0].label, "llama.qkv");
  EXPECT_EQ((*shapes)[1].K, 1536);
  EXPECT_EQ((*shapes)[1].N, 2048);
  const std::string bad = scratch("bad_shapes.txt");
  std::ofstream(bad) << "4096 6144\n4096 -3\n";
  auto r = read_shapes(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":2:"), std::string::npos) << r.status().message();
  EXPECT_FALSE(read_shapes(scratch("missing.txt")).ok());
}

TEST(BenchDriver, TheRepositoryShapesFileParses) {
  auto shapes = read_shapes(QLINEAR_SOURCE_DIR "/bench/shapes.txt");
  ASSERT_TRUE(shapes.ok()) << shapes.status().to_string();
  EXPECT_GE(shapes->size(), 10u);
}

TEST(BenchDriver, EverySchemeHasAProblemAndUnknownOnesAreErrors) {
  for (const std::string& name : scheme_names()) {
    auto p = scheme_problem(name, 4096, 1024, DType::kBF16);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().to_string();
    EXPECT_EQ(p->K, 4096);
    EXPECT_EQ(p->N, 1024);
  }
  auto ch = scheme_problem("w4a16-ch", 4096, 1024, DType::kBF16);
  ASSERT_TRUE(ch.ok());
  EXPECT_EQ(ch->group_size, 4096);
  auto bad = scheme_problem("w3a16", 64, 64, DType::kBF16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("w4a16g128"), std::string::npos);
}

TEST(BenchDriver, WeightBytesCountCodesAtTheirWidthPlusScales) {
  // int4 g128, K=4096 N=1024: 4096*1024/2 code bytes + 32*1024 f16 scales.
  auto w4 = scheme_problem("w4a16g128", 4096, 1024, DType::kBF16);
  ASSERT_TRUE(w4.ok());
  EXPECT_EQ(weight_bytes(*w4), 4096 * 1024 / 2 + 32 * 1024 * 2);
  auto zp = scheme_problem("w4a16g128-zp", 4096, 1024, DType::kBF16);
  ASSERT_TRUE(zp.ok());
  EXPECT_EQ(weight_bytes(*zp), 4096 * 1024 / 2 + 32 * 1024 * 2 + 32 * 1024 / 2);
  // fp8 channel: one byte per weight + one f32 scale per row; block 128x128: per block.
  auto fp8 = scheme_problem("fp8-w8a16", 4096, 1024, DType::kBF16);
  ASSERT_TRUE(fp8.ok());
  EXPECT_EQ(weight_bytes(*fp8), 4096 * 1024 + 1024 * 4);
  auto block = scheme_problem("fp8-block-w8a8", 4096, 1000, DType::kBF16);
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(weight_bytes(*block), 4096 * 1000 + 32 * 8 * 4);
  // dense: two bytes per weight, as stored.
  for (const char* dense : {"dense-bf16", "dense-f16"}) {
    auto d = scheme_problem(dense, 4096, 1000, DType::kBF16);
    ASSERT_TRUE(d.ok()) << dense;
    EXPECT_EQ(d->scheme, WeightScheme::kDense);
    EXPECT_EQ(weight_bytes(*d), 4096 * 1000 * 2) << dense;
  }
}

TEST(BenchDriver, MeasuresAPositiveBandwidth) {
  const double gbps = measure_memory_bandwidth(1, 1, int64_t{16} << 20);
  EXPECT_GT(gbps, 0.1);
  EXPECT_LT(gbps, 10000.0);
}

TEST(BenchDriver, RunsOneSmallCaseAndReportsConsistentNumbers) {
  BenchOptions options;
  options.shapes = {{256, 128, "tiny"}};
  options.schemes = {"fp8-w8a16"};
  options.batches = {1, 3};
  options.quick = true;
  options.threads = 1;
  options.progress = false;
  options.rotate_bytes = int64_t{4} << 20;
  options.membw_bytes = int64_t{16} << 20;
  int seen = 0;
  auto records = run_bench(options, [&seen](const BenchRecord&) { ++seen; });
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ(seen, 2);
  for (const BenchRecord& r : *records) {
    EXPECT_GT(r.median_s, 0.0);
    EXPECT_FALSE(r.kernel.empty());
    EXPECT_NEAR(r.gbps, r.weight_bytes / r.median_s / 1e9, 1e-9 * r.gbps);
    EXPECT_NEAR(r.gflops, 2.0 * r.M * r.K * r.N / r.median_s / 1e9, 1e-9 * r.gflops);
    EXPECT_NEAR(r.ratio_membw, r.gbps / r.membw_gbps, 1e-12);
    EXPECT_GT(r.blas_median_s, 0.0);
    EXPECT_NEAR(r.ratio_blas, r.blas_median_s / r.median_s, 1e-12);
    const auto j = nlohmann::json::parse(record_json(r));
    for (const char* key : {"scheme", "K", "N", "M", "kernel", "median_s", "weight_bytes", "gbps",
                            "membw_gbps", "ratio_membw", "blas_median_s", "ratio_blas"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_EQ(j["M"].get<int64_t>(), r.M);
  }
  EXPECT_NE(records_table(*records).find("| fp8-w8a16 | 256x128 tiny | 3 |"), std::string::npos)
      << records_table(*records);
}

TEST(BenchDriver, ABadOptionIsAnErrorNotACrash) {
  BenchOptions options;
  options.shapes = {{256, 128, ""}};
  options.schemes = {"nope"};
  options.progress = false;
  EXPECT_FALSE(run_bench(options, nullptr).ok());
  options.schemes = {"fp8-w8a16"};
  options.kernel = "cpu.no.such.kernel";
  EXPECT_FALSE(run_bench(options, nullptr).ok());
  options.kernel.clear();
  options.batches = {0};
  EXPECT_FALSE(run_bench(options, nullptr).ok());
}

}  // namespace
}  // namespace qlinear::bench
