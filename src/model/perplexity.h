// Token-level perplexity with the runner, as Hugging Face's sliding-window recipe defines it
// (transformers' "Perplexity of fixed-length models"): windows of `ctx` tokens that start every
// `stride` tokens; each window scores only the tokens the previous window did not (its last
// `end - previous_end` positions), each with the full window before it as context; the first
// token of the text is never scored. perplexity = exp(total negative log-likelihood / scored).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/status.h"
#include "model/decoder.h"

namespace qlinear {

struct PerplexityOptions {
  int64_t ctx = 0;     // window length in tokens (0: the decoder's context)
  int64_t stride = 0;  // tokens between window starts (0: ctx / 2), 1 <= stride <= ctx
};

struct PerplexityResult {
  double perplexity = 0.0;
  double nll = 0.0;     // summed over scored tokens, natural log
  int64_t scored = 0;   // tokens scored
  int64_t windows = 0;  // forward passes over windows
  int64_t ctx = 0;      // the window and stride used
  int64_t stride = 0;
  double seconds = 0.0;  // the forwards and scoring
};

// `on_window(done, total)` after each window (progress); may be empty.
// The window rules perplexity() applies, for callers that check before loading a model: ctx >= 2,
// 1 <= stride <= ctx (stride 0: ctx / 2). Returns the stride to use.
Result<int64_t> perplexity_stride(int64_t ctx, int64_t stride);

Result<PerplexityResult> perplexity(Decoder& decoder, std::span<const int32_t> ids,
                                    const PerplexityOptions& options,
                                    const std::function<void(int64_t, int64_t)>& on_window = {});

}  // namespace qlinear
