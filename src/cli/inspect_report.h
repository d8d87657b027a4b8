// What `qlinear inspect` found, gathered once and printed as text or JSON (inspect_print.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qlinear {

struct InspectModel {
  std::string dir;
  std::string architecture;
  std::string model_type;
  std::string torch_dtype;
  // Absent when config.json lacks the key.
  std::optional<int64_t> hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads,
      head_dim, vocab_size;
};

struct InspectQuantization {
  std::string format;   // quant_format_name
  std::string summary;  // QuantConfig::summary()
  std::string source;   // "config.json:quantization_config", "--quantization fp8", "none"
};

struct InspectLayer {
  std::string name;
  std::vector<std::string> shards;
  std::vector<int64_t> shard_sizes;
  int64_t N = 0;
  int64_t K = 0;
  std::string format;  // quant_format_name of the layer's spec
  bool quantized = false;
  std::string skip_reason;
  std::string scheme;  // Canonical::describe()
  std::string kind;    // "int", "fp8" or "dense"
  // int
  int bits = 16;
  int group_size = 0;  // canonical (K when channelwise)
  bool channelwise = false;
  bool sym = true;
  bool act_order = false;
  std::string packing;  // "gptq", "awq", "ct-packed"
  // fp8
  std::string fp8_weight;  // "tensor", "channel", "block"
  int block_n = 0;
  int block_k = 0;
  std::string activation;  // act_quant_name
  // dense
  std::string dense_dtype;
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_bf16 = 0;

  std::string group_text() const;  // "32" or "channel (K=256)"
};

struct InspectReport {
  InspectModel model;
  InspectQuantization quantization;
  std::vector<InspectLayer> layers;
  uint64_t checkpoint_bytes = 0;  // every safetensors file
};

void print_inspect_text(const InspectReport& report);
void print_inspect_json(const InspectReport& report);

}  // namespace qlinear
