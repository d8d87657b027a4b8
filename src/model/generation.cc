#include "model/generation.h"

#include <algorithm>
#include <chrono>

namespace qlinear {

Result<GenerationResult> generate(Decoder& decoder, std::span<const int32_t> prompt,
                                  const GenerationOptions& options,
                                  const std::function<bool(int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  QL_RETURN_IF_ERROR(check_sampling(options.sampling));
  if (prompt.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "generate: the prompt has no tokens");
  }
  if (options.max_tokens < 0) {
    return make_error(ErrorCode::kInvalidArgument, "--max-tokens {}: must be >= 0",
                      options.max_tokens);
  }
  const ModelConfig& config = decoder.config();
  const int64_t vocab = config.vocab;
  const int64_t chunk = decoder.max_rows();
  const int64_t ctx = decoder.context();
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  if (prompt_len > ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt has {} tokens; the context holds {} (--ctx)", prompt_len, ctx);
  }
  GenerationResult result;
  std::vector<int32_t> seen(prompt.begin(), prompt.end());
  // Without kept logits the decoder picks each token where the logits are: plain greedy
  // decoding takes the argmax on the device (Decoder::forward_greedy), sampling samples there
  // (Decoder::forward_sampled); each step brings back one id, not a row of logits.
  const bool ids_only = !options.keep_logits;
  const bool greedy = plain_greedy(options.sampling);
  std::vector<float> logits(static_cast<std::size_t>((ids_only ? 1 : chunk) * vocab));
  int32_t next = 0;  // the decoder's pick (ids_only)

  // Prefill: chunks of up to max_rows; the last row of the last chunk predicts the first token.
  const Clock::time_point prefill_start = Clock::now();
  for (int64_t start = 0; start < prompt_len; start += chunk) {
    const int64_t n = std::min(chunk, prompt_len - start);
    const bool all = options.keep_logits;
    const auto part = prompt.subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(n));
    if (ids_only) {
      // Earlier chunks' picks are unused: the argmax is the cheapest way to end them.
      if (greedy || start + n < prompt_len) {
        QL_ASSIGN_OR_RETURN(next, decoder.forward_greedy(part, start));
      } else {
        QL_ASSIGN_OR_RETURN(next, decoder.forward_sampled(part, start, options.sampling, seen, 0));
      }
      continue;
    }
    MatrixView out = MatrixView::dense(logits.data(), DType::kF32, all ? n : 1, vocab);
    QL_RETURN_IF_ERROR(decoder.forward(part, start, all, out));
    if (all) {
      result.logits.insert(result.logits.end(), logits.begin(),
                           logits.begin() + static_cast<std::ptrdiff_t>(n * vocab));
    }
  }
  result.prefill_seconds = std::chrono::duration<double>(Clock::now() - prefill_start).count();
  // The logits of the prompt's last position.
  const std::size_t last_row =
      options.keep_logits ? static_cast<std::size_t>(((prompt_len - 1) % chunk) * vocab) : 0;
  std::vector<float> row(logits.begin() + static_cast<std::ptrdiff_t>(last_row),
                         logits.begin() + static_cast<std::ptrdiff_t>(last_row + vocab));

  const Clock::time_point decode_start = Clock::now();
  result.stop_reason = "max_tokens";
  int64_t position = prompt_len;
  for (int64_t step = 0; step < options.max_tokens; ++step) {
    const int32_t token =
        ids_only ? next : sample_token(row, seen, options.sampling, static_cast<uint64_t>(step));
    result.output_ids.push_back(token);
    seen.push_back(token);
    const bool go_on = !on_token || on_token(token);
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end()) {
      result.stop_reason = "eos";
      break;
    }
    if (!go_on) {
      result.stop_reason = "stop";
      break;
    }
    if (step + 1 == options.max_tokens) break;
    if (position >= ctx) {
      result.stop_reason = "context";
      break;
    }
    const std::span<const int32_t> one(&token, 1);
    if (ids_only && greedy) {
      QL_ASSIGN_OR_RETURN(next, decoder.forward_greedy(one, position));
    } else if (ids_only) {
      QL_ASSIGN_OR_RETURN(next, decoder.forward_sampled(one, position, options.sampling, seen,
                                                        static_cast<uint64_t>(step + 1)));
    } else {
      MatrixView out = MatrixView::dense(row.data(), DType::kF32, 1, vocab);
      QL_RETURN_IF_ERROR(decoder.forward(one, position, false, out));
    }
    ++result.decode_steps;
    ++position;
    if (options.keep_logits) result.logits.insert(result.logits.end(), row.begin(), row.end());
  }
  result.decode_seconds = std::chrono::duration<double>(Clock::now() - decode_start).count();
  return result;
}

}  // namespace qlinear
