// The quantization configs exactly as the producing tools write them (docs/reference/formats.md
// §1, §3): AutoAWQ, AutoGPTQ / GPTQModel, compressed-tensors (llm-compressor) and quant_method
// fp8. Shared by the quantizer and the test fixtures.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace qlinear::layout {

using ordered_json = nlohmann::ordered_json;

// AutoAWQ / transformers AwqConfig: GEMM layout, real zero points.
ordered_json awq_config(int bits, int group_size, ordered_json modules_to_not_convert);
// AutoGPTQ quantize_config.json keys (checkpoint_format "gptq" is v1, "gptq_v2" GPTQModel's).
ordered_json gptq_config(int bits, int group_size, bool sym, bool desc_act,
                         std::string_view checkpoint_format);
// One compressed-tensors pack-quantized config group; `group_size` null for channelwise,
// `actorder` null or "group".
ordered_json ct_int_group(int bits, bool sym, std::string_view strategy, ordered_json group_size,
                          ordered_json actorder = nullptr);
// The compressed-tensors quantization_config around one config group.
ordered_json ct_config(std::string_view format, ordered_json group, ordered_json ignore);
// FP8 QuantizationArgs (float, symmetric) of one strategy.
ordered_json ct_fp8_args(std::string_view strategy, bool dynamic);
// A float-quantized config group.
ordered_json ct_fp8_group(ordered_json weights, ordered_json inputs);

}  // namespace qlinear::layout
