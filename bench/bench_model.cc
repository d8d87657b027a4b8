#include "bench/bench_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "bench/bench_driver.h"
#include "core/memory.h"
#include "model/generation.h"

namespace qlinear::bench {
namespace {

struct SyntheticShape {
  const char* name;
  int64_t hidden, layers, heads, kv_heads, head_dim, ffn, vocab;
  double theta;
  bool tied;
};

// The shapes of ../shared/tools/gpu_decode_peer.py and ../shared/tools/llamacpp_peer.sh.
constexpr SyntheticShape kShapes[] = {
    {"llama3-8b", 4096, 32, 32, 8, 128, 14336, 128256, 500000.0, false},
    {"llama3.2-1b", 2048, 16, 32, 8, 64, 8192, 128256, 500000.0, true},
    {"qwen2.5-7b", 3584, 28, 28, 4, 128, 18944, 152064, 1000000.0, false},
    {"llama2-7b", 4096, 32, 32, 32, 128, 11008, 32000, 10000.0, false},
    {"synth-1b", 2048, 16, 32, 8, 64, 8192, 32000, 500000.0, false},
    // Not a real model: small enough for tests of the benchmark itself.
    {"tiny", 256, 2, 4, 2, 64, 512, 1000, 10000.0, false},
};

// Problem templates (bench schemes) of the weight formats; the lm_head stays bf16 as in real
// AWQ / GPTQ / FP8 checkpoints.
const std::map<std::string, std::string>& format_schemes() {
  static const std::map<std::string, std::string> kFormats = {{"w4a16g128", "w4a16g128"},
                                                              {"w8a16", "w8a16"},
                                                              {"fp8-block", "fp8-block-w8a8"},
                                                              {"fp8-channel", "fp8-w8a8-token"},
                                                              {"bf16", ""}};
  return kFormats;
}

using Clock = std::chrono::steady_clock;

class SyntheticWeights final : public DecoderWeights {
 public:
  SyntheticWeights(ModelConfig config, std::string format, uint64_t seed)
      : config_(std::move(config)), format_(std::move(format)), seed_(seed) {}

  const ModelConfig& config() const override { return config_; }
  std::string where() const override { return "synthetic " + config_.architecture; }

  Result<ConstMatrixView> embeddings() override {
    if (embed_.data() == nullptr) {
      QL_ASSIGN_OR_RETURN(embed_, Tensor::allocate(DType::kBF16, {config_.vocab, config_.hidden}));
      auto* e = embed_.data_as<uint16_t>();
      const int64_t n = embed_.numel();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed_;
        x ^= x >> 31;
        e[i] = f32_to_bf16(static_cast<float>(static_cast<int64_t>(x % 2001) - 1000) * 2e-5f);
      }
    }
    return std::as_const(embed_).matrix();
  }

  Result<Tensor> norm(const std::string& /*name*/, int64_t n) override {
    QL_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(DType::kF32, {1, n}));
    for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = 1.0f;
    return t;
  }

  Status for_each_linear(
      const std::function<Status(const Canonical&, const std::string&)>& fn) override {
    const ModelConfig& c = config_;
    uint64_t seed = seed_;
    auto layer = [&](const std::string& name, int64_t K, std::vector<int64_t> shards,
                     bool dense) -> Status {
      int64_t N = 0;
      for (int64_t s : shards) N += s;
      LinearProblem p;
      const std::string scheme = dense ? "" : format_schemes().at(format_);
      if (scheme.empty()) {
        QL_ASSIGN_OR_RETURN(p, LinearProblem::parse(fmt::format("dense:bf16:K{}:N{}", K, N)));
      } else {
        QL_ASSIGN_OR_RETURN(p, scheme_problem(scheme, K, N, DType::kBF16));
      }
      Canonical w = random_canonical(p, seed++);
      w.name = name;
      w.shard_sizes = std::move(shards);
      return fn(w, "");
    };
    for (int64_t l = 0; l < c.layers; ++l) {
      const std::string p = fmt::format("model.layers.{}.", l);
      QL_RETURN_IF_ERROR(
          layer(p + "self_attn.qkv_proj", c.hidden, {c.q_size(), c.kv_size(), c.kv_size()}, false));
      QL_RETURN_IF_ERROR(layer(p + "self_attn.o_proj", c.q_size(), {c.hidden}, false));
      QL_RETURN_IF_ERROR(
          layer(p + "mlp.gate_up_proj", c.hidden, {c.intermediate, c.intermediate}, false));
      QL_RETURN_IF_ERROR(layer(p + "mlp.down_proj", c.intermediate, {c.hidden}, false));
    }
    return layer("lm_head", c.hidden, {c.vocab}, true);
  }

 private:
  ModelConfig config_;
  std::string format_;
  uint64_t seed_;
  Tensor embed_;
};

// The most sequences bench-model decodes together (their KV caches are allocated up front).
constexpr int64_t kMaxBatch = 256;

struct BatchedRun {
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  int64_t steps = 0;
};

// Static batching: each prompt prefilled into its own sequence, then `tokens` greedy tokens for
// every sequence, one decode_batch per step (all prompts have the same length, so every
// sequence sits at the same position).
Result<BatchedRun> batched_greedy(Decoder& decoder,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  int64_t tokens) {
  const int64_t vocab = decoder.config().vocab;
  const int64_t chunk = decoder.max_rows();
  const auto B = static_cast<int64_t>(prompts.size());
  const auto len = static_cast<int64_t>(prompts[0].size());
  std::vector<float> logits(static_cast<std::size_t>(B * vocab));
  std::vector<int32_t> next(static_cast<std::size_t>(B));
  auto argmax_rows = [&] {
    for (int64_t s = 0; s < B; ++s) {
      next[static_cast<std::size_t>(s)] = greedy_token(std::span<const float>(logits).subspan(
          static_cast<std::size_t>(s * vocab), static_cast<std::size_t>(vocab)));
    }
  };
  BatchedRun run;
  const Clock::time_point prefill_start = Clock::now();
  for (int64_t s = 0; s < B; ++s) {
    const std::span<const int32_t> prompt(prompts[static_cast<std::size_t>(s)]);
    for (int64_t start = 0; start < len; start += chunk) {
      const int64_t n = std::min(chunk, len - start);
      MatrixView out = MatrixView::dense(logits.data() + s * vocab, DType::kF32, 1, vocab);
      QL_RETURN_IF_ERROR(decoder.forward_sequence(
          s, prompt.subspan(static_cast<std::size_t>(start), static_cast<std::size_t>(n)), start,
          false, out));
    }
  }
  run.prefill_seconds = std::chrono::duration<double>(Clock::now() - prefill_start).count();
  argmax_rows();
  const Clock::time_point decode_start = Clock::now();
  std::vector<int32_t> positions(static_cast<std::size_t>(B));
  std::vector<int32_t> ids(next.size());
  for (int64_t step = 0; step + 1 < tokens && len + step < decoder.context(); ++step) {
    std::fill(positions.begin(), positions.end(), static_cast<int32_t>(len + step));
    // The argmax on the device, as generate's greedy decoding takes it.
    QL_RETURN_IF_ERROR(decoder.decode_batch_greedy(next, positions, ids));
    next.swap(ids);
    ++run.steps;
  }
  run.decode_seconds = std::chrono::duration<double>(Clock::now() - decode_start).count();
  return run;
}

}  // namespace

std::vector<std::string> synthetic_model_names() {
  std::vector<std::string> names;
  for (const SyntheticShape& s : kShapes) names.emplace_back(s.name);
  return names;
}

std::vector<std::string> model_format_names() {
  std::vector<std::string> names;
  for (const auto& [name, scheme] : format_schemes()) names.push_back(name);
  return names;
}

Result<ModelConfig> synthetic_config(const std::string& name) {
  for (const SyntheticShape& s : kShapes) {
    if (name != s.name) continue;
    ModelConfig c;
    c.arch = Architecture::kLlama;
    c.architecture = s.name;
    c.hidden = s.hidden;
    c.layers = s.layers;
    c.heads = s.heads;
    c.kv_heads = s.kv_heads;
    c.head_dim = s.head_dim;
    c.intermediate = s.ffn;
    c.vocab = s.vocab;
    c.max_positions = 131072;
    c.rms_eps = 1e-5;
    c.rope.theta = s.theta;
    c.tie_embeddings = s.tied;
    return c;
  }
  return make_error(ErrorCode::kInvalidArgument, "--synthetic \"{}\" is not a model; expected {}",
                    name, fmt::join(synthetic_model_names(), ", "));
}

Result<std::unique_ptr<DecoderWeights>> synthetic_weights(const ModelConfig& config,
                                                          const std::string& format,
                                                          uint64_t seed) {
  if (!format_schemes().contains(format)) {
    return make_error(ErrorCode::kInvalidArgument, "--format \"{}\" is not a format; expected {}",
                      format, fmt::join(model_format_names(), ", "));
  }
  return std::unique_ptr<DecoderWeights>(std::make_unique<SyntheticWeights>(config, format, seed));
}

Result<ModelBenchResult> run_model_bench(const ModelBenchOptions& options) {
  if (options.model_dir.empty() == options.synthetic.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "give exactly one of --model DIR or --synthetic");
  }
  if (options.prompt_len < 1 || options.gen_len < 1) {
    return make_error(ErrorCode::kInvalidArgument, "--prompt-len {} / --gen-len {}: must be >= 1",
                      options.prompt_len, options.gen_len);
  }
  if (options.batch < 1 || options.batch > kMaxBatch) {
    return make_error(ErrorCode::kInvalidArgument, "--batch {}: must be 1 to {}", options.batch,
                      kMaxBatch);
  }
  QL_ASSIGN_OR_RETURN(Device device, detect_device(options.device));
  const bool on_host = device.platform == Platform::kCpu;
  std::unique_ptr<DecoderWeights> weights;
  ModelBenchResult result;
  if (!options.model_dir.empty()) {
    QL_ASSIGN_OR_RETURN(weights,
                        checkpoint_weights(options.model_dir, options.decoder.quantization));
    result.model = options.model_dir;
    result.format = "checkpoint";
  } else {
    QL_ASSIGN_OR_RETURN(ModelConfig config, synthetic_config(options.synthetic));
    QL_ASSIGN_OR_RETURN(weights, synthetic_weights(config, options.format, options.seed));
    result.model = options.synthetic;
    result.format = options.format;
  }
  DecoderOptions dopts = options.decoder;
  result.dtype = std::string(dtype_name(dopts.act_dtype));
  result.kv_dtype = std::string(dtype_name(dopts.kv_dtype));
  dopts.ctx = std::max(dopts.ctx, options.prompt_len + options.gen_len + 1);
  dopts.max_rows =
      std::max(options.batch, std::max<int64_t>(1, std::min(options.prompt_len, int64_t{512})));
  dopts.sequences = options.batch;
  QL_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, Decoder::create(*weights, device, dopts));
  result.load_s = decoder->load_seconds();
  const ModelConfig& c = decoder->config();

  std::mt19937 rng(static_cast<uint32_t>(options.seed));
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(c.vocab - 1));
  std::vector<int32_t> prompt(static_cast<std::size_t>(options.prompt_len));
  for (int32_t& t : prompt) t = token(rng);
  const int threads = dopts.threads > 0 ? dopts.threads : device.cores;
  // The yardstick is the host's memory: meaningless for a GPU's, so left out (0) off the host.
  BandwidthProbe probe(std::max(threads, 1), on_host ? int64_t{256} << 20 : int64_t{1} << 20);
  // One warm-up run (first touch of every prepared page, OpenMP teams), then the measured one.
  QL_RETURN_IF_ERROR(check_sampling(options.sampling));
  if (options.batch > 1 && !plain_greedy(options.sampling)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--batch {}: batched decode is greedy; sampling options need --batch 1",
                      options.batch);
  }
  result.sampling = options.sampling;
  GenerationOptions gen;
  gen.sampling = options.sampling;
  gen.max_tokens = 2;
  QL_RETURN_IF_ERROR(generate(*decoder, prompt, gen).status());
  double before = 0.0, after = 0.0;
  result.batch = options.batch;
  if (options.batch == 1) {
    before = on_host ? probe.measure(3) : 0.0;
    gen.max_tokens = options.gen_len;
    QL_ASSIGN_OR_RETURN(GenerationResult run, generate(*decoder, prompt, gen));
    after = on_host ? probe.measure(3) : 0.0;
    result.prefill_tokens_per_s = static_cast<double>(prompt.size()) / run.prefill_seconds;
    result.decode_tokens_per_s =
        run.decode_steps > 0 ? static_cast<double>(run.decode_steps) / run.decode_seconds : 0.0;
  } else {
    std::vector<std::vector<int32_t>> prompts(static_cast<std::size_t>(options.batch));
    prompts[0] = prompt;
    for (std::size_t s = 1; s < prompts.size(); ++s) {
      prompts[s].resize(prompt.size());
      for (int32_t& t : prompts[s]) t = token(rng);
    }
    // Warm-up of the batched step (its first call at this M runs launch by launch).
    QL_RETURN_IF_ERROR(batched_greedy(*decoder, prompts, 2).status());
    before = on_host ? probe.measure(3) : 0.0;
    QL_ASSIGN_OR_RETURN(const BatchedRun run, batched_greedy(*decoder, prompts, options.gen_len));
    after = on_host ? probe.measure(3) : 0.0;
    result.prefill_tokens_per_s =
        static_cast<double>(prompt.size() * prompts.size()) / run.prefill_seconds;
    result.decode_tokens_per_s =
        run.steps > 0 ? static_cast<double>(run.steps) / run.decode_seconds : 0.0;
  }
  result.total_tokens_per_s = result.decode_tokens_per_s * static_cast<double>(options.batch);
  // Weights once per step, the embedding row, and the KV cache rows attention reads (mean over
  // the decoded positions).
  // An FP8 cache: one byte per element plus a 4-byte scale per row and kv head.
  const double kv_bytes = dopts.kv_dtype == DType::kF8E4M3
                              ? 1.0 + 4.0 / static_cast<double>(c.head_dim)
                              : (dopts.kv_dtype == DType::kBF16 ? 2.0 : 4.0);
  const double mean_positions =
      static_cast<double>(options.prompt_len) + static_cast<double>(options.gen_len) / 2.0;
  // With a batch: per decode step, the weights once and every sequence's row and cache.
  result.bytes_per_token =
      decoder->weight_bytes() +
      static_cast<uint64_t>(options.batch) *
          (static_cast<uint64_t>(c.hidden * 2) +
           static_cast<uint64_t>(2.0 * static_cast<double>(c.layers) * mean_positions *
                                 static_cast<double>(c.kv_size()) * kv_bytes));
  result.membw_gbps = 0.5 * (before + after);
  result.ratio_membw = result.membw_gbps > 0.0
                           ? static_cast<double>(result.bytes_per_token) *
                                 result.decode_tokens_per_s / (result.membw_gbps * 1e9)
                           : 0.0;
  result.decode_step = decoder->decode_step();
  if (!plain_greedy(options.sampling)) result.sampled_where = decoder->sampled_where();
  std::set<std::string> seen;
  for (const DecoderLayerKernels& k : decoder->kernels()) {
    const std::string kind = k.name.substr(k.name.rfind('.') + 1);
    for (const LinearBucket& b : k.buckets) {
      const std::string line = fmt::format("{}: M{}-{} {}{}", kind, b.m_min, b.m_max, b.kernel,
                                           b.engine.empty() ? "" : " [" + b.engine + "]");
      if (seen.insert(line).second) result.kernels.push_back(line);
    }
  }
  return result;
}

std::string model_result_json(const ModelBenchResult& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model;
  j["format"] = r.format;
  j["load_s"] = r.load_s;
  j["peak_rss_mib"] = peak_resident_bytes() / (1 << 20);
  j["dtype"] = r.dtype;
  j["kv_dtype"] = r.kv_dtype;
  j["prefill_tokens_per_s"] = r.prefill_tokens_per_s;
  j["decode_tokens_per_s"] = r.decode_tokens_per_s;
  j["batch"] = r.batch;
  j["total_tokens_per_s"] = r.total_tokens_per_s;
  j["bytes_per_token"] = r.bytes_per_token;
  j["membw_gbps"] = r.membw_gbps;
  j["ratio_membw"] = r.ratio_membw;
  j["decode_step"] = r.decode_step;
  j["sampling"] = {{"temperature", r.sampling.temperature},
                   {"top_k", r.sampling.top_k},
                   {"top_p", r.sampling.top_p},
                   {"min_p", r.sampling.min_p},
                   {"repetition_penalty", r.sampling.repetition_penalty}};
  if (!r.sampled_where.empty()) j["sampled_where"] = r.sampled_where;
  j["kernels"] = r.kernels;
  return j.dump();
}

}  // namespace qlinear::bench
