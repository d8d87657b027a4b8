// The generation loop over a Decoder: the prompt in chunks of max_rows (prefill), then one token
// per step (decode) until an EOS id, the caller's stop, or max_tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"
#include "model/sampler.h"

namespace qlinear {

struct GenerationOptions {
  int64_t max_tokens = 128;
  std::vector<int32_t> eos_ids;
  SamplingOptions sampling;
  bool keep_logits = false;  // every processed position's logits (--logits-out)
};

struct GenerationResult {
  std::vector<int32_t> output_ids;
  std::string stop_reason;  // "eos", "max_tokens", "stop", "context"
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  int64_t decode_steps = 0;   // forward calls of one token
  std::vector<float> logits;  // [positions processed, vocab] when keep_logits
};

// on_token(id): called for each generated token as it is chosen; return false to stop (a stop
// string); the token is kept either way.
Result<GenerationResult> generate(Decoder& decoder, std::span<const int32_t> prompt,
                                  const GenerationOptions& options,
                                  const std::function<bool(int32_t)>& on_token = {});

}  // namespace qlinear
