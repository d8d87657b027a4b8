// `qlinear quantize`: a float Hugging Face checkpoint (Llama-style decoder) in, a quantized
// checkpoint out, laid out exactly as AutoAWQ, AutoGPTQ, AutoRound, llm-compressor
// (compressed-tensors) or transformers' FP8 write it. docs/quantize.md has the algorithms and
// limits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::quantize {

enum class OutputFormat {
  kAwq,           // AutoAWQ GEMM, 4-bit, zero points
  kGptq,          // AutoGPTQ v1 (quantize_config.json + config.json)
  kAutoRound,     // auto-round, auto_gptq packing (sym) or auto_awq packing (asym)
  kCtW4A16,       // compressed-tensors pack-quantized 4-bit
  kCtW8A16,       // compressed-tensors pack-quantized 8-bit
  kCtFp8Dynamic,  // compressed-tensors FP8_DYNAMIC (channel weights, dynamic tokens)
  kCtFp8Static,   // compressed-tensors FP8 (tensor weights, static input_scale)
  kFp8Block,      // quant_method fp8, weight_block_size [128, 128], weight_scale_inv
};

std::string_view output_format_name(OutputFormat format);
std::optional<OutputFormat> output_format_from_name(std::string_view name);
std::string output_format_names();  // "awq|gptq|..."

struct QuantizeOptions {
  std::string model_dir;
  std::string out_dir;
  OutputFormat format = OutputFormat::kAwq;
  int bits = 0;        // 0: the format's default
  int group_size = 0;  // 0: 128; -1: channelwise
  std::optional<bool> sym;
  bool act_order = false;
  std::vector<std::string> ignore;  // ECMAScript regexes searched in layer names
  std::string calib_file;           // "" : no calibration
  int64_t calib_tokens = 4096;
  bool force = false;  // replace the checkpoint files in a non-empty --out
  bool progress = true;
  int threads = 0;
};

struct LayerReport {
  std::string name;
  int64_t N = 0;
  int64_t K = 0;
  std::string algorithm;  // "gptq", "awq+clip", "rtn+clip", "absmax", "ignored"
  // ||W - W_hat||_F / ||W||_F against the float weight that was quantized.
  double weight_error = 0.0;
  // sqrt(tr(D G D^T) / tr(W G W^T)) over the calibration inputs (G = X^T X); < 0 without them.
  double output_error = -1.0;
  double awq_alpha = -1.0;  // the chosen alpha of the layer's input group (awq only)
  double seconds = 0.0;
};

struct QuantizeReport {
  std::string format;
  std::string out_dir;
  int bits = 0;
  int group_size = 0;
  bool sym = true;
  bool act_order = false;
  std::vector<LayerReport> layers;
  std::vector<std::string> files;
  uint64_t bytes_written = 0;
  uint64_t bytes_in = 0;
  int64_t calib_tokens = 0;
  double calib_seconds = 0.0;
  double seconds = 0.0;
  std::vector<std::string> notes;  // e.g. the RTN fallback without --calib
};

// Quantizes `options.model_dir` into `options.out_dir`. Nothing but that folder is written; each
// file appears whole (io/output_file: written beside its final name, then renamed), config.json
// last.
Result<QuantizeReport> quantize_checkpoint(const QuantizeOptions& options);

}  // namespace qlinear::quantize
