#include "model/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace qlinear {
namespace {

// -log softmax(row)[target], in double (a vocabulary of 150k f32 terms loses digits in float).
double negative_log_likelihood(const float* row, int64_t vocab, int32_t target) {
  float max_logit = row[0];
  for (int64_t v = 1; v < vocab; ++v) max_logit = std::max(max_logit, row[v]);
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v] - max_logit));
  return std::log(sum) - static_cast<double>(row[target] - max_logit);
}

}  // namespace

Result<int64_t> perplexity_stride(int64_t ctx, int64_t stride_option) {
  if (ctx < 2) {
    return make_error(ErrorCode::kInvalidArgument, "--ctx {}: a window needs at least 2 tokens",
                      ctx);
  }
  const int64_t stride = stride_option > 0 ? stride_option : std::max<int64_t>(1, ctx / 2);
  if (stride > ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--stride {} is larger than --ctx {} (tokens between windows would never "
                      "be scored)",
                      stride, ctx);
  }
  return stride;
}

Result<PerplexityResult> perplexity(Decoder& decoder, std::span<const int32_t> ids,
                                    const PerplexityOptions& options,
                                    const std::function<void(int64_t, int64_t)>& on_window) {
  const int64_t vocab = decoder.config().vocab;
  const int64_t ctx = options.ctx > 0 ? options.ctx : decoder.context();
  QL_ASSIGN_OR_RETURN(const int64_t stride, perplexity_stride(ctx, options.stride));
  if (ctx > decoder.context()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--ctx {} is larger than the decoder's KV cache ({} positions)", ctx,
                      decoder.context());
  }
  const auto n = static_cast<int64_t>(ids.size());
  if (n < 2) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the text is {} token(s); perplexity needs at least 2", n);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[static_cast<std::size_t>(i)] < 0 || ids[static_cast<std::size_t>(i)] >= vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "token {} has id {}, outside the vocabulary (vocab_size {})", i,
                        ids[static_cast<std::size_t>(i)], vocab);
    }
  }

  const int64_t total_windows = n <= ctx ? 1 : (n - ctx + stride - 1) / stride + 1;
  const int64_t chunk = decoder.max_rows();
  std::vector<float> logits(static_cast<std::size_t>(chunk * vocab));
  PerplexityResult result;
  result.ctx = ctx;
  result.stride = stride;
  const auto start_time = std::chrono::steady_clock::now();
  int64_t previous_end = 0;
  for (int64_t begin = 0; previous_end < n; begin += stride) {
    const int64_t end = std::min(begin + ctx, n);
    // Positions p in [first_scored, end) are scored: token p predicted from the window's
    // logits at p - 1. HF's labels[:, :-target] = -100 with target = end - previous_end.
    const int64_t first_scored = std::max(previous_end, begin + 1);
    for (int64_t at = begin; at < end - 1; at += chunk) {
      const int64_t count = std::min(chunk, end - at);
      QL_RETURN_IF_ERROR(decoder.forward(
          ids.subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(count)), at - begin,
          /*all_logits=*/true, MatrixView::dense(logits.data(), DType::kF32, count, vocab)));
      for (int64_t r = 0; r < count; ++r) {
        const int64_t target = at + r + 1;
        if (target < first_scored || target >= end) continue;
        const double nll = negative_log_likelihood(logits.data() + r * vocab, vocab,
                                                   ids[static_cast<std::size_t>(target)]);
        if (!std::isfinite(nll)) {
          return make_error(ErrorCode::kCorrupt,
                            "the logits predicting token {} (window at {}) are not finite: the "
                            "weights overflow or hold NaN",
                            target, begin);
        }
        result.nll += nll;
        ++result.scored;
      }
    }
    previous_end = end;
    ++result.windows;
    if (on_window) on_window(result.windows, total_windows);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  result.perplexity = std::exp(result.nll / static_cast<double>(result.scored));
  return result;
}

}  // namespace qlinear
