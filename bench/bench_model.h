// `qlinear bench-model`: prefill and decode speed of a whole decoder, next to the machine's read
// bandwidth measured in the same run. Either a checkpoint folder, or a synthetic model: random
// weights of a real model's shapes in memory (no files), in one weight format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"

namespace qlinear::bench {

struct ModelBenchOptions {
  std::string model_dir;             // a checkpoint folder, or ""
  std::string synthetic;             // llama3-8b | llama3.2-1b | qwen2.5-7b | llama2-7b | synth-1b
  std::string format = "w4a16g128";  // w4a16g128 | w8a16 | fp8-block | fp8-channel | bf16
  int64_t prompt_len = 128;
  int64_t gen_len = 64;
  // Sequences decoded together (static batching): each gets its own random prompt, prefilled
  // one sequence at a time, then every decode step runs all of them at M = batch.
  int64_t batch = 1;
  DecoderOptions decoder;
  // How each decoded token is picked (batch 1; greedy by default): sampling runs where the
  // logits are (Decoder::forward_sampled), so its cost is part of the decode speed.
  SamplingOptions sampling;
  uint64_t seed = 1;
  std::string device = "cpu";  // cpu, opencl[:N], xpu (off the host: no bandwidth yardstick)
};

struct ModelBenchResult {
  std::string model;
  std::string format;
  std::string dtype;     // the activations the linear layers read
  std::string kv_dtype;  // the KV cache
  double load_s = 0.0;
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;  // per sequence: decode steps per second
  int64_t batch = 1;
  double total_tokens_per_s = 0.0;   // every sequence's tokens: batch x decode_tokens_per_s
  uint64_t bytes_per_token = 0;      // weights read per decode step (+ the mean KV cache read)
  double membw_gbps = 0.0;           // read bandwidth, probed before and after the decode
  double ratio_membw = 0.0;          // bytes_per_token * decode tok/s / membw
  std::vector<std::string> kernels;  // one "layer: kernel [engine]" per distinct choice
  std::string decode_step;           // Decoder::decode_step() after the decode
  SamplingOptions sampling;
  std::string sampled_where;  // Decoder::sampled_where() after the decode (sampling only)
};

std::vector<std::string> synthetic_model_names();
std::vector<std::string> model_format_names();
// The config of a synthetic model (real shapes; see the table in bench_model.cc).
Result<ModelConfig> synthetic_config(const std::string& name);
// Random weights of `config` in `format`, generated layer by layer in memory.
Result<std::unique_ptr<DecoderWeights>> synthetic_weights(const ModelConfig& config,
                                                          const std::string& format, uint64_t seed);

Result<ModelBenchResult> run_model_bench(const ModelBenchOptions& options);
std::string model_result_json(const ModelBenchResult& result);

}  // namespace qlinear::bench
