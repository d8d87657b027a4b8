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

// s in single quotes for /bin/sh.
std::string shell_quote(const std::string& s);

struct CliRun {
  int exit_code = -1;  // -1: did not start or did not exit normally
  std::string out;
  std::string err;
};
// Runs the qlinear CLI of this build with `args`: stdout, stderr (through a file in the existing
// folder `scratch_dir`) and the exit code. QLINEAR_DISABLED_KERNELS is unset, or set to
// `disabled_kernels` when that is not empty.
CliRun run_cli(const std::vector<std::string>& args, const std::string& scratch_dir,
               const std::string& disabled_kernels = "");

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
