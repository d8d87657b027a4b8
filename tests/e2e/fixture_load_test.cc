// The main correctness test of the loading foundation: every fixture format goes through
// Checkpoint -> parse_quant_config -> plan_linear_layers -> load_canonical, and the canonical
// weights must equal the fixture's known values exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <variant>

#include "convert/convert.h"
#include "e2e_util.h"
#include "io/checkpoint.h"
#include "quant/layer_plan.h"

namespace qlinear {
namespace {

class FixtureLoad : public ::testing::TestWithParam<FixtureFormat> {};

// The spec a parser reports for a shard must state what the fixture wrote.
void expect_spec(const QuantSpec& spec, const FixtureLayer& layer) {
  SCOPED_TRACE(layer.name);
  EXPECT_EQ(spec.layer, layer.name);
  ASSERT_EQ(spec.quantized, layer.spec.quantized) << spec.describe();
  if (!layer.spec.quantized) return;
  if (layer.spec.fp8) {
    ASSERT_TRUE(spec.fp8_spec.has_value()) << spec.describe();
    EXPECT_EQ(spec.fp8_spec->weight, layer.spec.granularity);
    EXPECT_EQ(spec.fp8_spec->activation, layer.spec.activation);
    if (layer.spec.granularity == Fp8WeightGranularity::kBlock) {
      EXPECT_EQ(spec.fp8_spec->block_n, layer.spec.block_n);
      EXPECT_EQ(spec.fp8_spec->block_k, layer.spec.block_k);
    }
    return;
  }
  ASSERT_TRUE(spec.int_spec.has_value()) << spec.describe();
  EXPECT_EQ(spec.int_spec->bits, layer.spec.bits);
  EXPECT_EQ(spec.int_spec->sym, layer.spec.sym);
  EXPECT_EQ(spec.int_spec->act_order, layer.spec.act_order);
  if (layer.spec.channelwise) {
    EXPECT_TRUE(spec.int_spec->group_size == -1 || spec.int_spec->group_size == layer.K)
        << spec.int_spec->group_size;
  } else {
    EXPECT_EQ(spec.int_spec->group_size, layer.spec.group_size);
  }
}

// Canonical facts that follow from the fused shards' expected specs.
void expect_canonical_form(const Canonical& c, const std::vector<const FixtureLayer*>& shards) {
  const ExpectedLayerSpec& spec = shards.front()->spec;
  std::vector<int64_t> sizes;
  for (const FixtureLayer* s : shards) sizes.push_back(s->N);
  EXPECT_EQ(c.shard_sizes, sizes);
  EXPECT_EQ(c.K(), shards.front()->K);
  if (!spec.quantized) {
    const auto* dense = std::get_if<DenseWeights>(&c.weights);
    ASSERT_NE(dense, nullptr) << c.describe();
    EXPECT_EQ(dense->dtype, DType::kBF16);
    return;
  }
  if (spec.fp8) {
    const auto* w = std::get_if<Fp8Weights>(&c.weights);
    ASSERT_NE(w, nullptr) << c.describe();
    EXPECT_EQ(w->granularity, spec.granularity);
    EXPECT_EQ(w->activation, spec.activation);
    if (spec.granularity == Fp8WeightGranularity::kBlock) {
      EXPECT_EQ(w->block_n, spec.block_n);
      EXPECT_EQ(w->block_k, spec.block_k);
    } else {
      EXPECT_EQ(w->scale.size(), static_cast<size_t>(c.N())) << "per-row scales";
    }
    if (spec.activation == ActQuant::kStaticTensor) {
      double max_input = 0.0;
      for (const FixtureLayer* s : shards) max_input = std::max(max_input, s->input_scale);
      EXPECT_EQ(w->input_scale, max_input) << "static input scale: the max over the shards";
    }
    return;
  }
  const auto* w = std::get_if<IntWeights>(&c.weights);
  ASSERT_NE(w, nullptr) << c.describe();
  EXPECT_EQ(w->bits, spec.bits);
  EXPECT_EQ(w->group_size, spec.group_size);
  EXPECT_EQ(w->zeros.empty(), spec.sym) << "symmetric layers carry no zero points";
  EXPECT_EQ(!w->g_idx.empty(), spec.act_order) << "g_idx kept only for real act-order";
  EXPECT_EQ(w->qweight.size(), static_cast<size_t>(c.K() * spec.bits / 32 * c.N()));
  // Codes are in GPTQ order: check a few against the fixture's logical codes.
  int64_t row0 = 0;
  for (const FixtureLayer* s : shards) {
    for (int64_t k : {int64_t{0}, s->K / 2 + 1, s->K - 1}) {
      for (int64_t n : {int64_t{0}, s->N - 1}) {
        EXPECT_EQ(w->code(k, row0 + n), s->codes[k * s->N + n]) << s->name << " k=" << k;
      }
    }
    row0 += s->N;
  }
}

TEST_P(FixtureLoad, CanonicalWeightsEqualTheKnownValues) {
  const FixtureFormat format = GetParam();
  auto fixture = write_fixture(format, e2e::fresh_dir("load", e2e::param_name(format)));
  ASSERT_TRUE(fixture.ok()) << fixture.status().to_string();
  const FixtureModel& model = *fixture;

  auto checkpoint = Checkpoint::open(model.dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto config = parse_quant_config(*checkpoint);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ((*config)->format(), e2e::expected_quant_format(format)) << (*config)->summary();
  auto plan = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();

  // The plan may list the layers in any order; each expected one must be there once.
  const auto expected = e2e::expected_fused_layers(model);
  ASSERT_EQ(plan->size(), expected.size());
  for (const e2e::FusedLayer& want : expected) {
    SCOPED_TRACE(want.name);
    const auto found = std::find_if(plan->begin(), plan->end(),
                                    [&](const LinearLayer& l) { return l.name == want.name; });
    ASSERT_NE(found, plan->end()) << "layer missing from the plan";
    const LinearLayer& layer = *found;
    ASSERT_EQ(layer.shards, want.shards);
    ASSERT_EQ(layer.specs.size(), layer.shards.size());
    std::vector<const FixtureLayer*> shards;
    for (size_t s = 0; s < layer.shards.size(); ++s) {
      const FixtureLayer* f = model.find(layer.shards[s]);
      ASSERT_NE(f, nullptr);
      shards.push_back(f);
      expect_spec(layer.specs[s], *f);
    }

    auto canonical = load_canonical(*checkpoint, layer);
    ASSERT_TRUE(canonical.ok()) << canonical.status().to_string();
    const Canonical& c = *canonical;
    EXPECT_EQ(c.name, layer.name);
    expect_canonical_form(c, shards);
    int64_t N = 0;
    for (const FixtureLayer* s : shards) N += s->N;
    ASSERT_EQ(c.N(), N);
    ASSERT_EQ(c.K(), shards.front()->K);

    // Every element, rows of the fused shards in order.
    int64_t mismatches = 0;
    int64_t row0 = 0;
    for (const FixtureLayer* s : shards) {
      for (int64_t n = 0; n < s->N; ++n) {
        for (int64_t k = 0; k < s->K; ++k) {
          const double got = c.dequant(row0 + n, k);
          if (got != s->at(n, k) && mismatches++ < 5) {
            ADD_FAILURE() << s->name << " W[" << n << "][" << k << "] = " << got << ", expected "
                          << s->at(n, k);
          }
        }
      }
      row0 += s->N;
    }
    EXPECT_EQ(mismatches, 0) << "of " << c.N() * c.K() << " weights differ";
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, FixtureLoad, ::testing::ValuesIn(all_fixture_formats()),
                         [](const auto& p) { return e2e::param_name(p.param); });

// Online FP8 of the unquantized fixture: every linear layer but the LM head becomes FP8, and
// the quantized weights stay close to the bf16 originals (per-channel scale max|W|/448).
TEST(OnlineFp8, QuantizesEveryLayerButTheLmHead) {
  auto fixture = write_fixture(FixtureFormat::kUnquantized, e2e::fresh_dir("load", "online"));
  ASSERT_TRUE(fixture.ok()) << fixture.status().to_string();
  auto checkpoint = Checkpoint::open(fixture->dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  QuantOptions options;
  options.quantization = "fp8";
  auto config = parse_quant_config(*checkpoint, options);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ((*config)->format(), QuantFormat::kOnlineFp8);
  auto plan = plan_linear_layers(*checkpoint, **config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->size(), 9u);
  for (const LinearLayer& layer : *plan) {
    SCOPED_TRACE(layer.name);
    auto c = load_canonical(*checkpoint, layer);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    if (layer.name == "lm_head") {
      EXPECT_TRUE(std::holds_alternative<DenseWeights>(c->weights));
      continue;
    }
    const auto* w = std::get_if<Fp8Weights>(&c->weights);
    ASSERT_NE(w, nullptr) << c->describe();
    // Per-channel or per-tensor scales: either way no scale exceeds max|W| / 448.
    double layer_max = 0.0;
    for (const std::string& shard : layer.shards) {
      for (double v : fixture->find(shard)->weight) layer_max = std::max(layer_max, std::abs(v));
    }
    int64_t row0 = 0;
    for (const std::string& shard : layer.shards) {
      const FixtureLayer& f = *fixture->find(shard);
      for (int64_t n = 0; n < f.N; ++n) {
        for (int64_t k = 0; k < f.K; k += 7) {
          // e4m3 keeps 3 mantissa bits: relative error <= 2^-4, plus the subnormal floor.
          const double tol = std::abs(f.at(n, k)) / 16.0 + layer_max / 448.0 * std::ldexp(1.0, -9);
          ASSERT_NEAR(c->dequant(row0 + n, k), f.at(n, k), tol) << shard << " n=" << n;
        }
      }
      row0 += f.N;
    }
  }
}

}  // namespace
}  // namespace qlinear
