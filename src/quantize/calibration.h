// Calibration statistics: the float model runs (qlinear's own CPU decoder) over tokenized text,
// and the input rows of every linear layer are folded into per-input statistics: the Gram
// matrix X^T X (GPTQ's Hessian is 2/n of it, AWQ's output error is measured against it),
// mean |x| per channel (AWQ's scales) and max |x| (the FP8 static input scale). Layers reading
// the same input (q/k/v, gate/up) share one record. Inputs are the float model's, not the
// partly quantized one's (no "true sequential" re-run); see docs/quantize.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "qlinear/view.h"

namespace qlinear::quantize {

struct InputStats {
  int64_t K = 0;
  int64_t rows = 0;
  std::vector<double> gram;     // [K, K], sum of x x^T
  std::vector<double> abs_sum;  // [K]
  double abs_max = 0.0;

  void add(ConstMatrixView x);            // f32 rows
  std::vector<double> gram_mean() const;  // gram / rows
  std::vector<double> abs_mean() const;
};

// "model.layers.0.self_attn.q_proj" -> "model.layers.0.self_attn.qkv_proj"; gate/up ->
// "...mlp.gate_up_proj"; other layers are their own key.
std::string input_key(std::string_view layer);

struct Calibration {
  std::map<std::string, InputStats> inputs;  // by input_key
  int64_t tokens = 0;
  int64_t sequences = 0;
  double seconds = 0.0;
  const InputStats* find(std::string_view layer) const;
};

struct CalibrationOptions {
  std::string model_dir;
  std::string text_file;
  int64_t max_tokens = 4096;
  int64_t seq_len = 512;  // capped by max_position_embeddings
  int threads = 0;
  bool with_lm_head = false;
};

Result<Calibration> calibrate(const CalibrationOptions& options);

}  // namespace qlinear::quantize
