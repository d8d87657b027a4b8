// What each output format allows (bits, group, symmetry, act-order), the on-disk scheme of its
// layers, which algorithm runs with and without calibration, and its quantization config.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "quantize/layouts.h"
#include "quantize/quantize.h"

namespace qlinear::quantize {

enum class Algorithm { kRtn, kGptq, kAwq, kAbsmax };

struct FormatPlan {
  OutputFormat format = OutputFormat::kAwq;
  bool fp8 = false;
  int bits = 4;
  int group_size = 128;  // -1: channelwise
  bool sym = true;
  bool act_order = false;
  Algorithm algorithm = Algorithm::kRtn;
  layout::LayoutScheme scheme;
  // AutoGPTQ also writes quantize_config.json beside config.json's quantization_config.
  std::string extra_config_file;
};

// Resolves the flags for the format; errors name the flag, its value and the rule.
// `model_dtype` picks compressed-tensors' scale dtype (the model's, as llm-compressor writes).
Result<FormatPlan> plan_format(const QuantizeOptions& options, DType model_dtype);

// A layer's shape against the layout's packing (K by the group and the pack factor, N for
// packed zero points / AWQ's column packing).
Status check_layer_shape(const FormatPlan& plan, const std::string& layer, int64_t N, int64_t K);

// The quantization_config, with `ignored` (full layer names) in the format's skip mechanism.
nlohmann::ordered_json quantization_config(const FormatPlan& plan,
                                           const std::vector<std::string>& ignored);

}  // namespace qlinear::quantize
