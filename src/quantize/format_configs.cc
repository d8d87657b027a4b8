#include "quantize/format_configs.h"

namespace qlinear::layout {

ordered_json awq_config(int bits, int group_size, ordered_json modules_to_not_convert) {
  return {
      {"quant_method", "awq"},    {"bits", bits},
      {"group_size", group_size}, {"zero_point", true},
      {"version", "gemm"},        {"modules_to_not_convert", std::move(modules_to_not_convert)}};
}

ordered_json gptq_config(int bits, int group_size, bool sym, bool desc_act,
                         std::string_view checkpoint_format) {
  return {
      {"quant_method", "gptq"},  {"bits", bits},         {"group_size", group_size},
      {"desc_act", desc_act},    {"sym", sym},           {"static_groups", false},
      {"true_sequential", true}, {"damp_percent", 0.01}, {"checkpoint_format", checkpoint_format},
      {"lm_head", false}};
}

ordered_json ct_int_group(int bits, bool sym, std::string_view strategy, ordered_json group_size,
                          ordered_json actorder) {
  return {{"targets", {"Linear"}},
          {"weights",
           {{"num_bits", bits},
            {"type", "int"},
            {"symmetric", sym},
            {"strategy", strategy},
            {"group_size", std::move(group_size)},
            {"dynamic", false},
            {"actorder", std::move(actorder)},
            {"observer", "minmax"},
            {"block_structure", nullptr}}},
          {"input_activations", nullptr},
          {"output_activations", nullptr},
          {"format", "pack-quantized"}};
}

ordered_json ct_config(std::string_view format, ordered_json group, ordered_json ignore) {
  return {
      {"quant_method", "compressed-tensors"}, {"format", format},
      {"quantization_status", "compressed"},  {"config_groups", {{"group_0", std::move(group)}}},
      {"ignore", std::move(ignore)},          {"kv_cache_scheme", nullptr},
      {"global_compression_ratio", nullptr},  {"version", "0.10.2"}};
}

ordered_json ct_fp8_args(std::string_view strategy, bool dynamic) {
  return {{"num_bits", 8},
          {"type", "float"},
          {"symmetric", true},
          {"strategy", strategy},
          {"dynamic", dynamic},
          {"group_size", nullptr},
          {"block_structure", nullptr},
          {"observer", dynamic ? ordered_json(nullptr) : ordered_json("minmax")}};
}

ordered_json ct_fp8_group(ordered_json weights, ordered_json inputs) {
  return {{"targets", {"Linear"}},
          {"weights", std::move(weights)},
          {"input_activations", std::move(inputs)},
          {"output_activations", nullptr},
          {"format", "float-quantized"}};
}

}  // namespace qlinear::layout
