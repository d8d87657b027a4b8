// `qlinear generate`: load a Hugging Face checkpoint folder, run the prompt and generate text,
// streaming tokens as they are made; load time and prefill / decode speed on stderr at the end.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_flags.h"
#include "cli/prompt_text.h"
#include "core/memory.h"
#include "io/safetensors.h"
#include "model/decoder.h"
#include "model/generation.h"

namespace qlinear {
namespace {

struct GenerateCliOptions {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  std::string system;
  int64_t max_tokens = 128;
  double temperature = -1.0;  // < 0: the checkpoint's default (greedy when it has none)
  double top_p = -1.0;
  int top_k = -1;
  double min_p = -1.0;
  double repetition_penalty = -1.0;
  uint64_t seed = 0;
  int64_t ctx = 4096;
  DecoderFlags decoder;
  std::string logits_out;
  std::vector<std::string> stop;
  bool json = false;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int64_t value = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 0 ||
        value > INT32_MAX) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--prompt-ids: \"{}\" is not a token id (a comma list of integers >= 0)",
                        item);
    }
    ids.push_back(static_cast<int32_t>(value));
    start = comma + 1;
  }
  return ids;
}

Status run_generate(const GenerateCliOptions& opts) {
  const int modes = static_cast<int>(!opts.prompt.empty()) +
                    static_cast<int>(!opts.prompt_ids.empty()) + static_cast<int>(opts.chat);
  if (modes != 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "give exactly one of --prompt TEXT, --prompt-ids 1,2,3 or --chat");
  }
  QL_ASSIGN_OR_RETURN(Device device, device_from_flags(opts.decoder.device, ""));
  QL_ASSIGN_OR_RETURN(DecoderOptions dopts, decoder_options_from_flags(opts.decoder));
  dopts.ctx = opts.ctx;
  dopts.progress = !opts.json;

  // The prompt as ids: given, or through the folder's tokenizer (and chat template).
  std::unique_ptr<PromptText> text;
  std::vector<int32_t> prompt;
  if (!opts.prompt_ids.empty()) {
    QL_ASSIGN_OR_RETURN(prompt, parse_ids(opts.prompt_ids));
  } else {
    QL_ASSIGN_OR_RETURN(text, PromptText::open(opts.model));
    if (opts.chat) {
      QL_ASSIGN_OR_RETURN(prompt, text->chat_prompt(opts.system, opts.prompt));
    } else {
      QL_ASSIGN_OR_RETURN(prompt, text->encode(opts.prompt));
    }
  }
  QL_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, Decoder::load(opts.model, device, dopts));
  const ModelConfig& config = decoder->config();
  for (int32_t id : prompt) {
    if (id >= config.vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt token id {} is outside the vocabulary (vocab_size {})", id,
                        config.vocab);
    }
  }

  GenerationOptions gen;
  gen.max_tokens = opts.max_tokens;
  gen.eos_ids = config.eos_ids;
  gen.keep_logits = !opts.logits_out.empty();
  SamplingOptions& s = gen.sampling;
  const GenerationDefaults& d = config.generation;
  // Explicit flags win; otherwise the checkpoint's generation_config.json (if it samples).
  const bool sample_default = d.do_sample.value_or(false);
  s.temperature = opts.temperature >= 0 ? opts.temperature
                  : sample_default      ? d.temperature.value_or(1.0)
                                        : 0.0;
  s.top_p = opts.top_p >= 0 ? opts.top_p : (sample_default ? d.top_p.value_or(1.0) : 1.0);
  s.top_k = opts.top_k >= 0 ? opts.top_k : (sample_default ? d.top_k.value_or(0) : 0);
  s.min_p = opts.min_p >= 0 ? opts.min_p : (sample_default ? d.min_p.value_or(0.0) : 0.0);
  s.repetition_penalty =
      opts.repetition_penalty >= 0 ? opts.repetition_penalty : d.repetition_penalty.value_or(1.0);
  s.seed = opts.seed;

  // Streams text as tokens come (never half a UTF-8 character); stop strings end generation.
  std::string generated_text;
  auto on_token = [&](int32_t id) {
    if (!text) {
      if (!opts.json) fmt::print("{}{}", generated_text.empty() ? "" : ",", id);
      generated_text += (generated_text.empty() ? "" : ",") + std::to_string(id);
      std::fflush(stdout);
      return true;
    }
    const std::string piece = text->stream(id);
    generated_text += piece;
    if (!opts.json) {
      fmt::print("{}", piece);
      std::fflush(stdout);
    }
    for (const std::string& stop : opts.stop) {
      if (!stop.empty() && generated_text.find(stop) != std::string::npos) return false;
    }
    return true;
  };
  // A plain text prompt is echoed, so the output reads as the continuation it is.
  if (!opts.json && text && !opts.chat) {
    fmt::print("{}", opts.prompt);
    std::fflush(stdout);
  }
  QL_ASSIGN_OR_RETURN(GenerationResult result, generate(*decoder, prompt, gen, on_token));
  if (text) generated_text += text->flush();

  const double prefill_tps = static_cast<double>(prompt.size()) / result.prefill_seconds;
  const double decode_tps = result.decode_steps > 0
                                ? static_cast<double>(result.decode_steps) / result.decode_seconds
                                : 0.0;
  if (!opts.logits_out.empty()) {
    const auto rows = static_cast<int64_t>(result.logits.size()) / config.vocab;
    SafetensorsWriter writer;
    writer.add_values("logits", DType::kF32, {rows, config.vocab}, result.logits);
    QL_RETURN_IF_ERROR(writer.write(opts.logits_out));
  }
  if (opts.json) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const DecoderLayerKernels& k : decoder->kernels()) {
      nlohmann::json buckets = nlohmann::json::array();
      for (const LinearBucket& b : k.buckets) {
        buckets.push_back(
            {{"m_min", b.m_min}, {"m_max", b.m_max}, {"kernel", b.kernel}, {"engine", b.engine}});
      }
      nlohmann::json entry = {{"layer", k.name}, {"rank", k.rank}, {"buckets", buckets}};
      if (!k.note.empty()) entry["note"] = k.note;
      kernels.push_back(std::move(entry));
    }
    nlohmann::json doc = {{"prompt_ids", prompt},
                          {"output_ids", result.output_ids},
                          {"text", generated_text},
                          {"stop_reason", result.stop_reason},
                          {"load_s", decoder->load_seconds()},
                          {"peak_rss_mib", peak_resident_bytes() / (1 << 20)},
                          {"prefill_tokens_per_s", prefill_tps},
                          {"decode_tokens_per_s", decode_tps},
                          {"decode_step", decoder->decode_step()},
                          {"dtype", dtype_name(dopts.act_dtype)},
                          {"kv_dtype", dtype_name(dopts.kv_dtype)},
                          {"kernels", kernels}};
    // Where sampled tokens were picked (Decoder::forward_sampled; --logits-out samples on the
    // host).
    if (!plain_greedy(gen.sampling) && opts.logits_out.empty()) {
      doc["sampled_where"] = decoder->sampled_where();
    }
    // Invalid UTF-8 a model may produce is replaced, never a thrown exception.
    fmt::print("{}\n", doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("\n");
    std::fflush(stdout);  // the text's last line before the summary on stderr
    fmt::print(stderr,
               "qlinear: {} prompt tokens, {} generated ({}); load {:.2f} s, prefill {:.1f} tok/s, "
               "decode {:.1f} tok/s, peak RSS {} MiB\n",
               prompt.size(), result.output_ids.size(), result.stop_reason, decoder->load_seconds(),
               prefill_tps, decode_tps, peak_resident_bytes() / (1 << 20));
  }
  return Status::ok_status();
}

}  // namespace

void add_generate_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<GenerateCliOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with a Hugging Face checkpoint");
  cmd->add_option("--model,-m", opts->model, "Checkpoint directory")->required();
  cmd->add_option("--prompt", opts->prompt, "Prompt text (tokenized as Hugging Face does)");
  cmd->add_option("--prompt-ids", opts->prompt_ids, "Prompt as token ids: 1,2,3");
  cmd->add_flag("--chat", opts->chat,
                "Chat: --prompt is the user message, formatted with the chat template");
  cmd->add_option("--system", opts->system, "With --chat: the system message");
  cmd->add_option("--max-tokens", opts->max_tokens, "Tokens to generate at most")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--temperature", opts->temperature,
                  "0: greedy (default unless generation_config.json samples)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass (0, 1]")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", opts->top_k, "Sample among the k most likely (0: off)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--min-p", opts->min_p, "Drop tokens under min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repetition-penalty", opts->repetition_penalty, "> 1 discourages repeats")
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_option("--seed", opts->seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--stop", opts->stop, "Stop when the text contains this (repeatable)");
  cmd->add_option("--ctx", opts->ctx, "Context length (KV cache positions)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22))
      ->capture_default_str();
  add_decoder_flags(cmd, &opts->decoder);
  cmd->add_option("--logits-out", opts->logits_out,
                  "Write f32 \"logits\" [positions, vocab] of every processed position here");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of streaming text");
  cmd->callback([opts, &ctx] { run_command(ctx, [&] { return run_generate(*opts); }); });
}

}  // namespace qlinear
