// Tensor-parallel emulation on the fixtures: shard every canonical layer tp ways, put the ranks
// back together (column: per fused shard along N; row: along K) and compare with the unsharded
// weights exactly. Where formats.md §5 forbids the split, shard_canonical must refuse it.
#include <gtest/gtest.h>

#include <variant>

#include "convert/convert.h"
#include "e2e_util.h"
#include "io/checkpoint.h"
#include "quant/layer_plan.h"
#include "shard/shard.h"

namespace qlinear {
namespace {

// formats.md §5.1, §5.2, §5.6 restated independently of shard/.
bool split_allowed(const Canonical& c, const FixtureLayer& first_shard, ParallelKind kind, int tp) {
  const ExpectedLayerSpec& spec = first_shard.spec;
  if (kind == ParallelKind::kColumn) {
    for (int64_t n : c.shard_sizes) {
      if (n % tp != 0) return false;
      if (spec.fp8 && spec.granularity == Fp8WeightGranularity::kBlock &&
          (n / tp) % spec.block_n != 0) {
        return false;
      }
    }
    return true;
  }
  const int64_t K = c.K();
  if (K % tp != 0) return false;
  const int64_t k_local = K / tp;
  if (!spec.quantized) return true;
  if (spec.fp8) {
    return spec.granularity != Fp8WeightGranularity::kBlock || k_local % spec.block_k == 0;
  }
  if (k_local % (32 / spec.bits) != 0) return false;
  if (!spec.channelwise && !spec.act_order && k_local % spec.group_size != 0) return false;
  return true;
}

class TpEmulation : public ::testing::TestWithParam<FixtureFormat> {};

TEST_P(TpEmulation, ShardsReassembleToTheUnshardedWeights) {
  const FixtureFormat format = GetParam();
  auto fixture = write_fixture(format, e2e::fresh_dir("tp", e2e::param_name(format)));
  ASSERT_TRUE(fixture.ok()) << fixture.status().to_string();
  auto checkpoint = Checkpoint::open(fixture->dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto plan = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();

  int checked_splits = 0;
  for (const LinearLayer& layer : *plan) {
    auto full = load_canonical(*checkpoint, layer);
    ASSERT_TRUE(full.ok()) << full.status().to_string();
    const Canonical& c = *full;
    const FixtureLayer& first = *fixture->find(layer.shards.front());
    const ParallelKind kind = parallel_kind_for(layer.name);
    const bool row_expected = layer.name.ends_with("o_proj") || layer.name.ends_with("down_proj");
    ASSERT_EQ(kind, row_expected ? ParallelKind::kRow : ParallelKind::kColumn) << layer.name;

    for (int tp : {2, 4}) {
      SCOPED_TRACE(layer.name + " tp=" + std::to_string(tp));
      if (!split_allowed(c, first, kind, tp)) {
        auto refused = shard_canonical(c, kind, tp, 0);
        ASSERT_FALSE(refused.ok()) << "formats.md §5 forbids this split";
        EXPECT_NE(refused.status().message().find(layer.name), std::string::npos)
            << refused.status().message();
        continue;
      }
      for (int rank = 0; rank < tp; ++rank) {
        auto part = shard_canonical(c, kind, tp, rank);
        ASSERT_TRUE(part.ok()) << part.status().to_string();
        const Canonical& p = *part;
        ASSERT_EQ(p.weights.index(), c.weights.index()) << "a shard keeps the weight form";
        int64_t mismatches = 0;
        if (kind == ParallelKind::kColumn) {
          ASSERT_EQ(p.K(), c.K());
          ASSERT_EQ(p.shard_sizes.size(), c.shard_sizes.size());
          int64_t global0 = 0;
          int64_t local0 = 0;
          for (size_t s = 0; s < c.shard_sizes.size(); ++s) {
            const int64_t local = c.shard_sizes[s] / tp;
            ASSERT_EQ(p.shard_sizes[s], local);
            for (int64_t i = 0; i < local; ++i) {
              for (int64_t k = 0; k < c.K(); ++k) {
                const int64_t n = global0 + rank * local + i;
                if (p.dequant(local0 + i, k) != c.dequant(n, k)) ++mismatches;
              }
            }
            global0 += c.shard_sizes[s];
            local0 += local;
          }
          ASSERT_EQ(p.N(), local0);
        } else {
          const int64_t k_local = c.K() / tp;
          ASSERT_EQ(p.N(), c.N());
          ASSERT_EQ(p.K(), k_local);
          for (int64_t n = 0; n < c.N(); ++n) {
            for (int64_t k = 0; k < k_local; ++k) {
              if (p.dequant(n, k) != c.dequant(n, rank * k_local + k)) ++mismatches;
            }
          }
          if (const auto* w = std::get_if<IntWeights>(&p.weights)) {
            if (first.spec.channelwise) {
              EXPECT_EQ(w->group_size, k_local) << "channelwise: one group over K_local";
              EXPECT_EQ(w->scales.size(), static_cast<size_t>(c.N())) << "[1, N] replicated";
            }
            if (first.spec.act_order) {
              const auto& cw = std::get<IntWeights>(c.weights);
              EXPECT_EQ(w->num_groups, cw.num_groups) << "act-order keeps the full table";
              for (int64_t k = 0; k < k_local; ++k) {
                EXPECT_EQ(w->g_idx[k], cw.g_idx[rank * k_local + k]) << "global group ids";
              }
            }
          }
        }
        EXPECT_EQ(mismatches, 0) << "rank " << rank << " differs from the unsharded weights";
        ++checked_splits;
      }
    }
  }
  EXPECT_GT(checked_splits, 0);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, TpEmulation, ::testing::ValuesIn(all_fixture_formats()),
                         [](const auto& p) { return e2e::param_name(p.param); });

}  // namespace
}  // namespace qlinear
