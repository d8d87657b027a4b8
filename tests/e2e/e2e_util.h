// Shared helpers of the end-to-end tests: fixture folders, the fused layer layout a Llama
// checkpoint must plan to, and the quantization format each fixture must parse as.
#pragma once

#include <string>
#include <vector>

#include "fixtures/fixtures.h"
#include "quant/quant_spec.h"

namespace qlinear::e2e {

// A fresh (emptied) folder under the test scratch directory.
std::string fresh_dir(const std::string& group, const std::string& name);

struct FusedLayer {
  std::string name;
  std::vector<std::string> shards;  // unfused names in N order
};
// qkv_proj, o_proj, gate_up_proj, down_proj per decoder layer, then lm_head.
std::vector<FusedLayer> expected_fused_layers(const FixtureModel& model);

QuantFormat expected_quant_format(FixtureFormat format);

// Test-name-safe fixture name for parameterized tests.
std::string param_name(FixtureFormat format);

}  // namespace qlinear::e2e
