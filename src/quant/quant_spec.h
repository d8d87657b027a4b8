// QuantSpec: what one (unfused) linear layer of a checkpoint is, as every format parser reports
// it. Formats describe data; they never name a platform or a kernel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear {

class Checkpoint;

enum class QuantFormat {
  kUnquantized,        // plain f32/bf16/f16 checkpoint
  kAwq,                // quant_method awq (GEMM version only)
  kGptq,               // quant_method gptq (AutoGPTQ / GPTQModel)
  kAutoRound,          // auto-round / auto_round / intel/auto-round
  kCompressedTensors,  // llm-compressor: pack-quantized int or float-quantized FP8
  kFp8,                // quant_method fp8 (AutoFP8, DeepSeek, Qwen FP8)
  kOnlineFp8,          // unquantized checkpoint + --quantization fp8
};
std::string_view quant_format_name(QuantFormat format);

// How the integer codes are laid out in the checkpoint.
enum class IntPacking {
  kGptq,      // qweight [K/pf, N] packed along K; qzeros [G, N/pf]; scales [G, N]; g_idx [K]
  kAwq,       // qweight [K, N/pf] packed along N, interleaved; qzeros [G, N/pf]; scales [G, N]
  kCtPacked,  // weight_packed [N, K/pf]; weight_scale [N, G]; weight_zero_point [N/pf, G]
};
std::string_view int_packing_name(IntPacking packing);

enum class GptqZeroFormat { kV1, kV2 };  // v1 stores z - 1 (checkpoint_format "gptq")

struct IntSpec {
  int bits = 4;
  int group_size = 128;  // as configured: -1 means channelwise (convert/ normalises to K)
  bool sym = true;
  bool act_order = false;  // desc_act / actorder: expect a g_idx tensor
  IntPacking packing = IntPacking::kGptq;
  GptqZeroFormat zero_format = GptqZeroFormat::kV1;  // kGptq packing only
  // AWQ configs say "zero_point" (= !sym); messages quote the key the config used.
  bool sym_from_zero_point = false;
};

// The config setting behind `spec.sym`, as its format writes it: "zero_point=false" (AWQ),
// "symmetric=true" (compressed-tensors), "sym=true" (GPTQ, AutoRound).
std::string sym_setting_text(const IntSpec& spec);

enum class Fp8WeightGranularity { kTensor, kChannel, kBlock };
std::string_view fp8_weight_granularity_name(Fp8WeightGranularity g);

enum class ActQuant {
  kNone,           // W8A16: activations stay in 16/32-bit float
  kDynamicToken,   // per-token scale computed at run time
  kDynamicTensor,  // one scale per call computed at run time
  kStaticTensor,   // input_scale from the checkpoint
  kDynamicGroup,   // per token per block_k channels (block weights)
};
std::string_view act_quant_name(ActQuant a);

struct Fp8Spec {
  Fp8WeightGranularity weight = Fp8WeightGranularity::kChannel;
  int block_n = 0;  // kBlock only
  int block_k = 0;
  ActQuant activation = ActQuant::kNone;
  // Tensor names relative to the layer prefix.
  std::string scale_name = "weight_scale";  // "weight_scale_inv" for quant_method fp8 blocks
  bool online = false;  // quantize a dense bf16/f16/f32 weight at load (per-channel scales)
};

struct QuantSpec {
  std::string layer;  // unfused module name, e.g. "model.layers.0.self_attn.q_proj"
  QuantFormat format = QuantFormat::kUnquantized;
  bool quantized = false;   // false: dense weights; skip_reason says why
  std::string skip_reason;  // "in modules_to_not_convert (substring \"lm_head\")"
  std::optional<IntSpec> int_spec;
  std::optional<Fp8Spec> fp8_spec;
  // "bits=4 group=128 sym act-order packing=gptq/v1" or "fp8 channel dyn-token" or "dense"
  std::string describe() const;
  // True when both layers would be quantized the same way (fused-shard agreement).
  bool same_scheme(const QuantSpec& other) const;
};

// One per checkpoint: the parsed quantization_config of one format.
class QuantConfig {
 public:
  virtual ~QuantConfig() = default;
  virtual QuantFormat format() const = 0;
  // Resolves an unfused linear layer name to its spec. Errors name the JSON key and value.
  virtual Result<QuantSpec> resolve(std::string_view layer) const = 0;
  // One line for `inspect`: "awq bits=4 group=128 zero_point=true version=gemm".
  virtual std::string summary() const = 0;
  // The reason `name` is named by an explicit skip entry (modules_to_not_convert, ignore,
  // dynamic "-:", ...), or nullopt. Unlike resolve(), it never skips a name merely for being
  // absent from an include list, so it can be asked about fused names that no checkpoint
  // lists (formats.md §2, fused-layer rule 1).
  virtual std::optional<std::string> skip_entry(std::string_view name) const {
    (void)name;
    return std::nullopt;
  }
};

struct QuantOptions {
  // --quantization: "" (use the checkpoint's own) or "fp8" (online FP8 of an unquantized model).
  std::string quantization;
  std::vector<std::string> online_ignore;  // names or "re:" regexes (unfused names)
};

// Reads the checkpoint's quantization config (or none) and returns its parser. An unknown
// quant_method, an unsupported bits value, an AWQ version other than gemm, ... are errors that
// name the config source, the key and the value. Nothing is silently treated as unquantized.
Result<std::unique_ptr<QuantConfig>> parse_quant_config(const Checkpoint& checkpoint,
                                                        const QuantOptions& options = {});

}  // namespace qlinear
