// The decoder (decoder.h): loading, the per-rank layout of every projection, and the forward.
#include "model/decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/progress.h"
#include "core/tensor.h"
#include "kernels/device_context.h"
#include "model/ops.h"
#include "model/sampler.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"
#include "shard/shard.h"

namespace qlinear {
namespace {

using Clock = std::chrono::steady_clock;

// QLINEAR_STEP_SKIP=op,op,... leaves those operations out of every forward: a profiling knob
// only (docs/runner.md "Where a step's time goes"): the step's time without an operation, against
// the step's time with it, is what that operation costs inside the recorded step, its overlap
// with the neighbours included, which no per-kernel profiler run shows. The outputs are then
// wrong; a warning says so once. Names: norm (every RMSNorm and add + RMSNorm), qkv, rope_kv
// (RoPE and the KV store), attention, o, gate_up, silu, down, lm_head.
struct StepSkips {
  bool norm = false, qkv = false, rope_kv = false, attention = false, o = false, gate_up = false,
       silu = false, down = false, lm_head = false;
};

const StepSkips& step_skips() {
  static const StepSkips skips = [] {
    StepSkips s;
    const char* env = std::getenv("QLINEAR_STEP_SKIP");
    if (env == nullptr || *env == '\0') return s;
    const std::pair<std::string_view, bool*> names[] = {
        {"norm", &s.norm},           {"qkv", &s.qkv},   {"rope_kv", &s.rope_kv},
        {"attention", &s.attention}, {"o", &s.o},       {"gate_up", &s.gate_up},
        {"silu", &s.silu},           {"down", &s.down}, {"lm_head", &s.lm_head}};
    std::string_view rest(env);
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view name = rest.substr(0, comma);
      bool known = false;
      for (const auto& [n, flag] : names) {
        if (n == name) *flag = known = true;
      }
      if (!known) log_warn("QLINEAR_STEP_SKIP: unknown operation \"{}\" ignored", name);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    log_warn(
        "QLINEAR_STEP_SKIP={}: these operations are left out, every output is wrong "
        "(a profiling knob)",
        env);
    return s;
  }();
  return skips;
}

// An on / off switch from the environment for A/B measurements from the CLI: 1 on, 0 off, -1
// unset (or any other value).
int env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return -1;
  return std::string_view(v) == "1" ? 1 : std::string_view(v) == "0" ? 0 : -1;
}

// The residual add + RMSNorm done inside the linear layers around it when their kernels can
// (docs/runner.md "The norm inside the linear layers"): DecoderOptions::fuse_norms in forwards
// of at most norm_fusion_max_rows rows; QLINEAR_NORM_FUSION=1 turns it on at every row count and
// =0 off, for every decoder.
bool norm_fusion_enabled(const DecoderOptions& options, int64_t rows) {
  static const int forced = env_switch("QLINEAR_NORM_FUSION");
  if (forced >= 0) return forced == 1;
  return options.fuse_norms && rows <= options.norm_fusion_max_rows;
}

// The SwiGLU inside gate_up (DecoderOptions::fuse_swiglu; QLINEAR_SWIGLU_FUSION=1 / 0 overrides
// it for every decoder, as QLINEAR_NORM_FUSION does the norms).
bool swiglu_fusion_enabled(bool option) {
  static const int forced = env_switch("QLINEAR_SWIGLU_FUSION");
  return forced < 0 ? option : forced == 1;
}

// A [gate | up] shard whose two windows are the halves of its columns, in that order.
bool gate_up_halves(const ShardPlan& plan) {
  return plan.windows.size() == 2 && plan.windows[0].begin == 0 &&
         plan.windows[1].begin == plan.windows[0].size &&
         plan.windows[1].size == plan.windows[0].size &&
         plan.weights.N() == 2 * plan.windows[0].size;
}

// --- projections of one rank ------------------------------------------------------------------

// A column-parallel projection of one rank: one Linear (fused) or several (unfused shards), each
// writing its own columns of the rank's output buffer; `slots` are the logical outputs (q, k, v or
// gate, up) inside that buffer.
struct ColumnPart {
  Linear linear;
  int64_t col = 0;
};
struct ColumnProjection {
  std::vector<ColumnPart> parts;
  int64_t width = 0;
  std::vector<std::optional<ColumnWindow>> slots;
};

// A row-parallel projection of one rank: its input is the rank's activations at pad_front inside
// k_padded columns (zeros around them when a group straddles ranks).
struct RowProjection {
  std::optional<Linear> linear;
  int64_t pad_front = 0;
  int64_t k_padded = 0;
};

struct RankLayer {
  ColumnProjection qkv;
  RowProjection o;
  ColumnProjection gate_up;
  RowProjection down;
};

struct Layer {
  Tensor input_norm;
  Tensor post_norm;
  Tensor q_norm;
  Tensor k_norm;
  std::vector<RankLayer> ranks;
};

// Which projection a linear layer of the checkpoint is, and its slot in it.
enum class Role { kQkv, kQ, kK, kV, kO, kGateUp, kGate, kUp, kDown, kLmHead };

struct Placement {
  int64_t layer = -1;  // -1: lm_head
  Role role = Role::kLmHead;
};

Result<Placement> place(const std::string& name, int64_t layers) {
  static const std::regex kLayer(R"(^model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)$)");
  if (name == "lm_head") return Placement{-1, Role::kLmHead};
  std::smatch m;
  if (!std::regex_match(name, m, kLayer)) {
    return make_error(ErrorCode::kUnsupported,
                      "linear layer \"{}\" has no place in a Llama-style decoder (expected "
                      "model.layers.N.self_attn.{{q,k,v,o}}_proj, model.layers.N.mlp."
                      "{{gate,up,down}}_proj or lm_head)",
                      name);
  }
  const int64_t layer = std::stoll(m[1].str());
  if (layer >= layers) {
    return make_error(ErrorCode::kMisconfigured,
                      "linear layer \"{}\": layer {} but config.json \"num_hidden_layers\" = {}",
                      name, layer, layers);
  }
  const std::string leaf = m[3].str();
  const std::map<std::string, Role> roles = {
      {"qkv_proj", Role::kQkv},   {"q_proj", Role::kQ},   {"k_proj", Role::kK},
      {"v_proj", Role::kV},       {"o_proj", Role::kO},   {"gate_up_proj", Role::kGateUp},
      {"gate_proj", Role::kGate}, {"up_proj", Role::kUp}, {"down_proj", Role::kDown}};
  const auto it = roles.find(leaf);
  if (it == roles.end()) {
    return make_error(ErrorCode::kUnsupported,
                      "linear layer \"{}\": \"{}\" is not a projection "
                      "of a Llama-style decoder",
                      name, leaf);
  }
  return Placement{layer, it->second};
}

// Checkpoint-sized bytes a layer's weights stream per call (codes, scales as stored, zeros).
uint64_t streamed_bytes(const Canonical& c) {
  if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
    const uint64_t groups = static_cast<uint64_t>(w->num_groups * w->N);
    return static_cast<uint64_t>(w->K * w->N * w->bits / 8) + groups * 2 +
           (w->zeros.empty() ? 0 : groups * w->bits / 8);
  }
  if (const auto* f = std::get_if<Fp8Weights>(&c.weights)) {
    return static_cast<uint64_t>(f->N * f->K) + f->scale.size() * 4;
  }
  const auto& d = std::get<DenseWeights>(c.weights);
  return d.data.size();
}

class DeviceDecoder final : public Decoder {
 public:
  const ModelConfig& config() const override { return config_; }
  int64_t max_rows() const override { return options_.max_rows; }
  int64_t context() const override { return options_.ctx; }
  std::vector<DecoderLayerKernels> kernels() const override { return kernels_; }
  uint64_t weight_bytes() const override { return weight_bytes_; }
  double load_seconds() const override { return load_seconds_; }
  std::string decode_step() const override {
    return !steps_.empty() ? "CUDA graph" : "launch by launch (" + why_eager_ + ")";
  }
  int64_t sequences() const override { return options_.sequences; }
  std::string sampled_where() const override {
    return fmt::format("device {}, host {} ({} past the device's ordered candidates)",
                       sampled_on_device_, sampled_on_host_, left_to_host_);
  }

  Status load(DecoderWeights& weights, const Device& device, const DecoderOptions& options);
  Status forward(std::span<const int32_t> tokens, int64_t start, bool all_logits,
                 MatrixView logits) override {
    return forward_sequence(0, tokens, start, all_logits, logits);
  }
  Status forward_sequence(int64_t sequence, std::span<const int32_t> tokens, int64_t start,
                          bool all_logits, MatrixView logits) override;
  Status decode_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                      MatrixView logits) override;
  Result<int32_t> forward_greedy(std::span<const int32_t> tokens, int64_t start) override;
  Status decode_batch_greedy(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                             std::span<int32_t> ids) override;
  Result<int32_t> forward_sampled(std::span<const int32_t> tokens, int64_t start,
                                  const SamplingOptions& options, std::span<const int32_t> seen,
                                  uint64_t step) override;

 private:
  Status place_part(const Canonical& part, const std::string& note, const Device& device);
  Status add_column(ColumnProjection& projection, std::vector<int> slot_ids, const ShardPlan& plan,
                    Linear linear);
  Status check_complete() const;
  // Whether every linear layer's kernels can run inside a recorded step (a CUDA graph).
  bool every_linear_capturable() const;
  Status allocate_buffers();
  Status run_column(const ColumnProjection& p, ConstMatrixView x, MatrixView out,
                    const LinearFusion& fusion = {});
  Status run_row(const RowProjection& p, ConstMatrixView x, MatrixView out,
                 const LinearFusion& fusion = {});
  // Whether the residual add + RMSNorm between `before` (run on `rows` rows) and `after` (on
  // `after_rows`) can be fused into them in this step: both kernels can, one rank, bf16 or f32
  // activations (the norm's input is stored unscaled: f16 could overflow), no calibration hook
  // and no QLINEAR_STEP_SKIP of a fused operation.
  bool fuse_norm(const RowProjection& before, int64_t rows, const ColumnProjection& after,
                 int64_t after_rows) const;
  // Whether gate_up can end with the SiLU-gated product on `rows` rows: one [gate | up] layer
  // whose kernel can (fusion_at), no calibration hook, no QLINEAR_STEP_SKIP of gate_up or silu.
  bool fuse_swiglu(const ColumnProjection& gate_up, int64_t rows) const;
  // Queues the forward of T tokens (tokens_ already written) up to the lm_head's
  // outputs in lm_buf_, with no wait and no copy to the host (so it can be recorded). Row t
  // belongs to sequence first_sequence + t / rows_per_sequence (KvCacheView; 0: all rows).
  // `greedy`: then the argmax of those rows into argmax_ids_ (device_argmax() only).
  Status queue_step(int64_t T, bool all_logits, int64_t first_sequence, int64_t rows_per_sequence,
                    bool greedy);
  // Replays (recording it first) the decode step of B rows, sequence t in row t (B = 1: sequence
  // 0's one-token step), with or without its argmax; false: run it launch by launch instead.
  Result<bool> replay_decode_step(int64_t B, bool greedy);
  // tokens_ from the host (positions: one per row, or empty for start + t), the
  // queued forward (recorded when `decode_rows` > 0: a decode step of that many sequences), then
  // the logits of every row (all_logits) or of the last into `logits`, or, when `greedy_ids` is
  // not empty, their greedy ids into it instead (`logits` unused).
  Status run_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                  int64_t start, int64_t first_sequence, int64_t rows_per_sequence, bool all_logits,
                  int64_t decode_rows, MatrixView logits, std::span<int32_t> greedy_ids = {});
  // The argmax runs on the device when one rank holds the whole vocabulary (with the lm_head
  // split, the ranks' maxima would need one more merge: the logits come to the host instead).
  // QLINEAR_HOST_ARGMAX=1 brings the logits to the host anyway (a knob for A/B measurements).
  bool device_argmax() const {
    static const bool on_host = [] {
      const char* v = std::getenv("QLINEAR_HOST_ARGMAX");
      return v != nullptr && std::string_view(v) == "1";
    }();
    return lm_head_.size() == 1 && !on_host;
  }
  // Sampling runs on the device when one rank holds the whole vocabulary and the backend has the
  // op (until it says kUnsupported); QLINEAR_HOST_SAMPLE=1 samples on the host (A/B knob).
  bool device_sampling() const {
    static const bool on_host = [] {
      const char* v = std::getenv("QLINEAR_HOST_SAMPLE");
      return v != nullptr && std::string_view(v) == "1";
    }();
    return lm_head_.size() == 1 && !on_host && !sample_unsupported_;
  }
  // seen_flags_ = the ids in `seen` (the repetition penalty's set on the device): when `seen`
  // extends the ids already marked only the new ones are uploaded, else the flags start over.
  Status mark_seen(std::span<const int32_t> seen);
  // The logits of the last forward's rows (all_logits: every row, else the last) into `logits`.
  Status logits_to_host(int64_t out_rows, MatrixView logits);
  // forward_sequence's argument checks (tokens per call, the sequence, the context).
  Status check_rows(int64_t sequence, std::span<const int32_t> tokens, int64_t start) const;
  // decode_batch's (sequences per call, one position each inside the context).
  Status check_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions) const;
  // A device tensor of `dtype` [rows, cols] (host memory on the cpu).
  Result<Tensor> device_tensor(DType dtype, int64_t rows, int64_t cols) const;
  // `host` in the device's memory (itself on the cpu).
  Result<Tensor> to_device(Tensor host) const;
  Status download_window(ConstMatrixView src, ColumnWindow window, MatrixView dst);
  bool on_host() const { return dc_->location().host_accessible(); }

  DecoderOptions options_;
  DeviceContext* dc_ = nullptr;
  ModelConfig config_;
  std::string where_;
  std::unique_ptr<DecoderOps> ops_;
  ConstMatrixView embed_;  // [vocab, hidden] in the checkpoint's dtype (mapped, or embed_copy_)
  Tensor embed_copy_;      // the table in device memory (not on the cpu)
  Tensor final_norm_;
  std::vector<Layer> layers_;
  std::vector<ColumnProjection> lm_head_;  // per rank (one when the vocabulary does not split)
  int64_t heads_per_rank_ = 0;
  int64_t kv_heads_per_rank_ = 0;
  int64_t inter_per_rank_ = 0;
  std::vector<DecoderLayerKernels> kernels_;
  uint64_t weight_bytes_ = 0;
  double load_seconds_ = 0.0;

  // Buffers for max_rows tokens, allocated once.
  // tokens_: row 0 the ids, row 1 the positions of a forward's rows (one upload for both).
  Tensor hidden_, normed_, delta_, partial_, tokens_, workspace_, rope_cos_, rope_sin_;
  Tensor norm_sums_;  // f64 [max_rows, ceil(hidden / 16)]: the fused norm's partial sums
  Tensor host_ids_, host_logits_;  // pinned staging for a device: ids and positions up, logits down
  Tensor argmax_ids_, host_argmax_;  // greedy ids [1, max_rows] (device), their pinned staging
  std::vector<float> split_vocab_logits_;  // greedy under a TP-split vocabulary (run_rows)
  // Sampling (forward_sampled): the row sampled on the host, the penalty's flags on the device
  // (U8 [1, vocab], allocated on first use) with the ids marked so far and their host mirror.
  std::vector<float> sample_row_;
  Tensor seen_flags_;
  std::vector<int32_t> seen_marked_;
  std::vector<uint8_t> seen_host_;
  bool sample_unsupported_ = false;
  int64_t sampled_on_device_ = 0, sampled_on_host_ = 0, left_to_host_ = 0;
  // The one-token step recorded once (a CUDA graph) and replayed for every decode token: one
  // submission instead of ~10 launches per layer. Null until the first decode step, and for good
  // when the device cannot record (why_not_recorded_ says why, QLINEAR_VERBOSE=run).
  // Per number of rows B (batched decode of sequences 0 .. B - 1; B = 1: sequence 0 alone) and
  // whether the step ends in the argmax (key 2 B + greedy).
  std::map<int64_t, std::unique_ptr<RecordedWork>> steps_;
  bool record_decode_ = false;
  std::map<int64_t, int> eager_decode_steps_;
  std::string why_eager_ = "not yet recorded";
  Tensor kv_k_, kv_v_;
  Tensor kv_k_scale_, kv_v_scale_;  // an FP8 cache's scales [rows, kv heads]
  std::vector<Tensor> qkv_buf_, attn_buf_, gate_up_buf_, act_buf_, lm_buf_;
  RopeTable rope_;
  ExecContext ctx_;
};

Status DeviceDecoder::add_column(ColumnProjection& projection, std::vector<int> slot_ids,
                                 const ShardPlan& plan, Linear linear) {
  if (plan.windows.size() != slot_ids.size()) {
    return make_error(ErrorCode::kInternal, "{}: {} windows for {} slots", linear.name(),
                      plan.windows.size(), slot_ids.size());
  }
  const int64_t col = projection.width;
  for (std::size_t i = 0; i < slot_ids.size(); ++i) {
    const auto slot = static_cast<std::size_t>(slot_ids[i]);
    if (projection.slots.size() <= slot) projection.slots.resize(slot + 1);
    projection.slots[slot] = ColumnWindow{col + plan.windows[i].begin, plan.windows[i].size};
  }
  projection.width += linear.N();
  projection.parts.push_back({std::move(linear), col});
  return Status::ok_status();
}

Status DeviceDecoder::place_part(const Canonical& part, const std::string& note,
                                 const Device& device) {
  QL_ASSIGN_OR_RETURN(const Placement where, place(part.name, config_.layers));
  const int tp = options_.tp;
  // lm_head splits its vocabulary only when every rank gets the same number of rows.
  const bool replicate = where.role == Role::kLmHead && config_.vocab % tp != 0;
  const int ranks = replicate ? 1 : tp;
  for (int r = 0; r < ranks; ++r) {
    const ParallelKind kind = parallel_kind_for(part.name);
    QL_ASSIGN_OR_RETURN(ShardPlan plan, plan_shard(part, kind, ranks, r));
    LinearOptions lo;
    lo.policy = options_.policy;
    lo.act_dtype = options_.act_dtype;
    lo.out_dtype = DType::kF32;
    lo.max_rows = options_.max_rows;
    lo.tp = ranks;
    lo.swiglu_halves = where.role == Role::kGateUp && swiglu_fusion_enabled(options_.fuse_swiglu) &&
                       gate_up_halves(plan);
    weight_bytes_ += streamed_bytes(plan.weights);
    QL_ASSIGN_OR_RETURN(Linear linear, Linear::create(plan.weights, device, lo, part.name));
    std::string layer_note = note;
    if (!plan.padding.empty()) {
      layer_note += (layer_note.empty() ? "" : "; ") + plan.padding;
    }
    if (replicate && tp > 1) {
      layer_note += fmt::format("{}replicated: vocab {} does not split {} ways",
                                layer_note.empty() ? "" : "; ", config_.vocab, tp);
    }
    kernels_.push_back({part.name, r, linear.buckets(), layer_note});
    if (where.role == Role::kLmHead) {
      QL_RETURN_IF_ERROR(
          add_column(lm_head_[static_cast<std::size_t>(r)], {0}, plan, std::move(linear)));
      continue;
    }
    RankLayer& rank =
        layers_[static_cast<std::size_t>(where.layer)].ranks[static_cast<std::size_t>(r)];
    switch (where.role) {
      case Role::kQkv:
        QL_RETURN_IF_ERROR(add_column(rank.qkv, {0, 1, 2}, plan, std::move(linear)));
        break;
      case Role::kQ:
      case Role::kK:
      case Role::kV:
        QL_RETURN_IF_ERROR(
            add_column(rank.qkv, {static_cast<int>(where.role) - 1}, plan, std::move(linear)));
        break;
      case Role::kGateUp:
        QL_RETURN_IF_ERROR(add_column(rank.gate_up, {0, 1}, plan, std::move(linear)));
        break;
      case Role::kGate:
      case Role::kUp:
        QL_RETURN_IF_ERROR(
            add_column(rank.gate_up, {where.role == Role::kGate ? 0 : 1}, plan, std::move(linear)));
        break;
      case Role::kO:
      case Role::kDown: {
        RowProjection& row = where.role == Role::kO ? rank.o : rank.down;
        row.pad_front = plan.pad_front;
        row.k_padded = plan.weights.K();
        row.linear = std::move(linear);
        break;
      }
      case Role::kLmHead:
        break;
    }
  }
  return Status::ok_status();
}

// The shapes every rank's projections must have, against config.json.
Status DeviceDecoder::check_complete() const {
  const ModelConfig& c = config_;
  const std::string dir = where_;
  auto missing = [&](int64_t layer, std::string_view what) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: model.layers.{} has no {} (config.json \"num_hidden_layers\" = {})", dir,
                      layer, what, c.layers);
  };
  auto width = [&](int64_t layer, std::string_view what, int64_t got, int64_t want,
                   std::string_view rule) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: model.layers.{}.{} gives {} outputs per rank; config.json needs {} ({})",
                      dir, layer, what, got, want, rule);
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    for (const RankLayer& r : layers_[static_cast<std::size_t>(l)].ranks) {
      if (r.qkv.slots.size() != 3 || !r.qkv.slots[0] || !r.qkv.slots[1] || !r.qkv.slots[2]) {
        return missing(l, "self_attn q_proj / k_proj / v_proj");
      }
      if (!r.o.linear) return missing(l, "self_attn.o_proj");
      if (r.gate_up.slots.size() != 2 || !r.gate_up.slots[0] || !r.gate_up.slots[1]) {
        return missing(l, "mlp.gate_proj / up_proj");
      }
      if (!r.down.linear) return missing(l, "mlp.down_proj");
      if (r.qkv.slots[0]->size != heads_per_rank_ * c.head_dim) {
        return width(l, "self_attn.q_proj", r.qkv.slots[0]->size, heads_per_rank_ * c.head_dim,
                     "num_attention_heads x head_dim");
      }
      for (int s : {1, 2}) {
        if (r.qkv.slots[static_cast<std::size_t>(s)]->size != kv_heads_per_rank_ * c.head_dim) {
          return width(l, s == 1 ? "self_attn.k_proj" : "self_attn.v_proj",
                       r.qkv.slots[static_cast<std::size_t>(s)]->size,
                       kv_heads_per_rank_ * c.head_dim, "num_key_value_heads x head_dim");
        }
      }
      for (int s : {0, 1}) {
        if (r.gate_up.slots[static_cast<std::size_t>(s)]->size != inter_per_rank_) {
          return width(l, s == 0 ? "mlp.gate_proj" : "mlp.up_proj",
                       r.gate_up.slots[static_cast<std::size_t>(s)]->size, inter_per_rank_,
                       "intermediate_size");
        }
      }
      for (const ColumnPart& part : r.qkv.parts) {
        if (part.linear.K() != c.hidden) {
          return width(l, "self_attn q/k/v inputs", part.linear.K(), c.hidden, "hidden_size");
        }
      }
      if (r.o.linear->N() != c.hidden || r.down.linear->N() != c.hidden) {
        return width(l, "o_proj / down_proj", r.o.linear->N(), c.hidden, "hidden_size");
      }
    }
  }
  for (const ColumnProjection& lm : lm_head_) {
    if (lm.slots.empty() || !lm.slots[0]) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: no lm_head.weight and config.json \"tie_word_embeddings\" is false",
                        dir);
    }
  }
  return Status::ok_status();
}

Status DeviceDecoder::allocate_buffers() {
  const int64_t R = options_.max_rows;
  const ModelConfig& c = config_;
  QL_ASSIGN_OR_RETURN(hidden_, device_tensor(DType::kF32, R, c.hidden));
  QL_ASSIGN_OR_RETURN(normed_, device_tensor(options_.act_dtype, R, c.hidden));
  QL_ASSIGN_OR_RETURN(delta_, device_tensor(DType::kF32, R, c.hidden));
  QL_ASSIGN_OR_RETURN(partial_, device_tensor(DType::kF32, R, c.hidden));
  QL_ASSIGN_OR_RETURN(norm_sums_, device_tensor(DType::kF64, R, (c.hidden + 15) / 16));
  QL_ASSIGN_OR_RETURN(tokens_, device_tensor(DType::kI32, 2, R));
  QL_ASSIGN_OR_RETURN(argmax_ids_, device_tensor(DType::kI32, 1, R));
  if (!on_host()) {
    QL_ASSIGN_OR_RETURN(host_ids_, Tensor::allocate(DType::kI32, {2, R}, dc_->staging_allocator()));
    QL_ASSIGN_OR_RETURN(host_argmax_,
                        Tensor::allocate(DType::kI32, {1, R}, dc_->staging_allocator()));
  }
  std::size_t workspace = 0;
  auto need = [&](const Linear& l) { workspace = std::max(workspace, l.workspace_bytes(R)); };
  for (std::size_t r = 0; r < layers_.front().ranks.size(); ++r) {
    const RankLayer& rank = layers_.front().ranks[r];
    Tensor t;
    QL_ASSIGN_OR_RETURN(t, device_tensor(DType::kF32, R, rank.qkv.width));
    qkv_buf_.push_back(std::move(t));
    QL_ASSIGN_OR_RETURN(t, device_tensor(options_.act_dtype, R, rank.o.k_padded));
    attn_buf_.push_back(std::move(t));
    QL_ASSIGN_OR_RETURN(t, device_tensor(DType::kF32, R, rank.gate_up.width));
    gate_up_buf_.push_back(std::move(t));
    QL_ASSIGN_OR_RETURN(t, device_tensor(options_.act_dtype, R, rank.down.k_padded));
    act_buf_.push_back(std::move(t));
  }
  for (const Layer& layer : layers_) {
    for (std::size_t r = 0; r < layer.ranks.size(); ++r) {
      const RankLayer& rank = layer.ranks[r];
      // Every layer shares the rank's buffers: their shapes must agree with layer 0's.
      if (rank.qkv.width != qkv_buf_[r].shape()[1] || rank.o.k_padded != attn_buf_[r].shape()[1] ||
          rank.gate_up.width != gate_up_buf_[r].shape()[1] ||
          rank.down.k_padded != act_buf_[r].shape()[1]) {
        return make_error(ErrorCode::kUnsupported,
                          "{}: the decoder layers do not all have the same shapes (layer 0's "
                          "buffers are reused by every layer)",
                          where_);
      }
      for (const ColumnPart& p : rank.qkv.parts) need(p.linear);
      for (const ColumnPart& p : rank.gate_up.parts) need(p.linear);
      need(*rank.o.linear);
      need(*rank.down.linear);
    }
  }
  for (const ColumnProjection& lm : lm_head_) {
    Tensor t;
    QL_ASSIGN_OR_RETURN(t, device_tensor(DType::kF32, R, lm.width));
    lm_buf_.push_back(std::move(t));
    for (const ColumnPart& p : lm.parts) need(p.linear);
  }
  if (!on_host()) {
    int64_t widest = 0;
    for (const ColumnProjection& lm : lm_head_) widest = std::max(widest, lm.width);
    QL_ASSIGN_OR_RETURN(host_logits_,
                        Tensor::allocate(DType::kF32, {R, widest}, dc_->staging_allocator()));
  }
  QL_ASSIGN_OR_RETURN(workspace_, Tensor::allocate(DType::kU8, {static_cast<int64_t>(workspace)},
                                                   dc_->allocator()));
  ctx_.threads = options_.threads;
  ctx_.stream = dc_->default_stream();
  ctx_.workspace = {workspace_.data(), workspace_.nbytes(), dc_->location()};

  // KV cache and the rotary table for ctx positions.
  const int64_t width = c.kv_size();
  const int64_t cache_rows = c.layers * options_.sequences * options_.ctx;
  QL_ASSIGN_OR_RETURN(kv_k_, device_tensor(options_.kv_dtype, cache_rows, width));
  QL_ASSIGN_OR_RETURN(kv_v_, device_tensor(options_.kv_dtype, cache_rows, width));
  if (options_.kv_dtype == DType::kF8E4M3) {
    QL_ASSIGN_OR_RETURN(kv_k_scale_, device_tensor(DType::kF32, cache_rows, c.kv_heads));
    QL_ASSIGN_OR_RETURN(kv_v_scale_, device_tensor(DType::kF32, cache_rows, c.kv_heads));
  }
  const RopeFrequencies freq = rope_frequencies(c);
  const int64_t half = c.head_dim / 2;
  QL_ASSIGN_OR_RETURN(rope_cos_, Tensor::allocate(DType::kF32, {options_.ctx, half}));
  QL_ASSIGN_OR_RETURN(rope_sin_, Tensor::allocate(DType::kF32, {options_.ctx, half}));
  for (int64_t p = 0; p < options_.ctx; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      // As transformers: f32 inverse frequencies times the f32 position, cos / sin of that.
      const float angle = static_cast<float>(p) * static_cast<float>(freq.inv_freq[i]);
      rope_cos_.data_as<float>()[p * half + i] =
          static_cast<float>(std::cos(static_cast<double>(angle)) * freq.attention_factor);
      rope_sin_.data_as<float>()[p * half + i] =
          static_cast<float>(std::sin(static_cast<double>(angle)) * freq.attention_factor);
    }
  }
  QL_ASSIGN_OR_RETURN(rope_cos_, to_device(std::move(rope_cos_)));
  QL_ASSIGN_OR_RETURN(rope_sin_, to_device(std::move(rope_sin_)));
  rope_ = {options_.ctx, half, std::as_const(rope_cos_).matrix(),
           std::as_const(rope_sin_).matrix()};
  return Status::ok_status();
}

// Columns `window` of the device matrix `src` (dense rows) into the host matrix `dst`, through
// the host staging buffer.
Status DeviceDecoder::download_window(ConstMatrixView src, ColumnWindow window, MatrixView dst) {
  const std::size_t bytes =
      static_cast<std::size_t>(src.rows() * src.ld()) * dtype_size(src.dtype());
  if (src.dtype() != DType::kF32 || bytes > host_logits_.nbytes()) {
    return make_error(ErrorCode::kInternal, "logits download: {} bytes for a {}-byte buffer", bytes,
                      host_logits_.nbytes());
  }
  QL_RETURN_IF_ERROR(dc_->synchronize(ctx_.stream));
  QL_RETURN_IF_ERROR(dc_->download(host_logits_.data(), src.data(),
                                   static_cast<std::size_t>(src.offset()) * sizeof(float), bytes));
  const auto* rows = host_logits_.data_as<float>();
  for (int64_t m = 0; m < src.rows(); ++m) {
    auto* out = static_cast<float*>(dst.row(m));
    std::copy(rows + m * src.ld() + window.begin, rows + m * src.ld() + window.begin + window.size,
              out);
  }
  return Status::ok_status();
}

Result<Tensor> DeviceDecoder::device_tensor(DType dtype, int64_t rows, int64_t cols) const {
  return Tensor::allocate(dtype, {rows, cols}, dc_->allocator());
}

Result<Tensor> DeviceDecoder::to_device(Tensor host) const {
  if (on_host() || host.data() == nullptr) return host;
  QL_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(host.dtype(), host.shape(), dc_->allocator()));
  QL_RETURN_IF_ERROR(dc_->upload(t.data(), 0, host.data(), host.nbytes()));
  return t;
}

Status DeviceDecoder::load(DecoderWeights& weights, const Device& device,
                           const DecoderOptions& options) {
  const Clock::time_point start = Clock::now();
  options_ = options;
  config_ = weights.config();
  where_ = weights.where();
  if (options.tp < 1 || options.ctx < 1 || options.max_rows < 1 || options.sequences < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--tp {}, --ctx {}, max rows {}, sequences {}: must be >= 1", options.tp,
                      options.ctx, options.max_rows, options.sequences);
  }
  QL_ASSIGN_OR_RETURN(dc_, device_context(device));
  const ModelConfig& c = config_;
  const int tp = options.tp;
  if (c.heads % tp != 0 || c.kv_heads % tp != 0 || c.intermediate % tp != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--tp {}: needs num_attention_heads ({}), num_key_value_heads ({}) and "
                      "intermediate_size ({}) to be multiples of it",
                      tp, c.heads, c.kv_heads, c.intermediate);
  }
  if (options.kv_dtype != DType::kF32 && options.kv_dtype != DType::kBF16 &&
      options.kv_dtype != DType::kF8E4M3) {
    return make_error(ErrorCode::kInvalidArgument, "the KV cache is f32, bf16 or fp8, not {}",
                      dtype_name(options.kv_dtype));
  }
  heads_per_rank_ = c.heads / tp;
  kv_heads_per_rank_ = c.kv_heads / tp;
  inter_per_rank_ = c.intermediate / tp;
  QL_ASSIGN_OR_RETURN(ops_, make_decoder_ops(*dc_, options.threads));

  QL_ASSIGN_OR_RETURN(embed_, weights.embeddings());
  if (!on_host()) {
    // The table once in device memory (mapped pages stay on the host).
    QL_ASSIGN_OR_RETURN(embed_copy_, device_tensor(embed_.dtype(), embed_.rows(), embed_.cols()));
    if (embed_.ld() != embed_.cols()) {
      return make_error(ErrorCode::kInternal, "{}: embedding rows are not contiguous", where_);
    }
    QL_RETURN_IF_ERROR(dc_->upload(embed_copy_.data(), 0, embed_.data(), embed_copy_.nbytes()));
    embed_ = std::as_const(embed_copy_).matrix();
  }
  auto norm = [&](const std::string& name, int64_t n) -> Result<Tensor> {
    QL_ASSIGN_OR_RETURN(Tensor host, weights.norm(name, n));
    return to_device(std::move(host));
  };
  QL_ASSIGN_OR_RETURN(final_norm_, norm("model.norm.weight", c.hidden));
  layers_.resize(static_cast<std::size_t>(c.layers));
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer& layer = layers_[static_cast<std::size_t>(l)];
    const std::string prefix = fmt::format("model.layers.{}.", l);
    QL_ASSIGN_OR_RETURN(layer.input_norm, norm(prefix + "input_layernorm.weight", c.hidden));
    QL_ASSIGN_OR_RETURN(layer.post_norm,
                        norm(prefix + "post_attention_layernorm.weight", c.hidden));
    if (c.qk_norm) {
      QL_ASSIGN_OR_RETURN(layer.q_norm, norm(prefix + "self_attn.q_norm.weight", c.head_dim));
      QL_ASSIGN_OR_RETURN(layer.k_norm, norm(prefix + "self_attn.k_norm.weight", c.head_dim));
    }
    layer.ranks.resize(static_cast<std::size_t>(tp));
  }
  lm_head_.resize(static_cast<std::size_t>(c.vocab % tp == 0 ? tp : 1));

  // Linear layers, converted and prepared one at a time.
  Progress progress("loading", static_cast<uint64_t>(c.layers * 4 + 1), options.progress);
  QL_RETURN_IF_ERROR(weights.for_each_linear([&](const Canonical& part, const std::string& note) {
    const Status placed = place_part(part, note, device);
    if (placed.ok()) progress.advance(1);
    return placed;
  }));
  progress.finish();
  QL_RETURN_IF_ERROR(check_complete());
  QL_RETURN_IF_ERROR(allocate_buffers());
  why_eager_ = on_host()                    ? "the cpu"
               : !options_.record_decode    ? "--eager"
               : options_.on_linear_input   ? "a calibration hook"
               : !every_linear_capturable() ? "a kernel cannot run inside a CUDA graph"
                                            : "not yet recorded";
  record_decode_ = why_eager_ == "not yet recorded";
  load_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  return Status::ok_status();
}

Status DeviceDecoder::run_column(const ColumnProjection& p, ConstMatrixView x, MatrixView out,
                                 const LinearFusion& fusion) {
  for (const ColumnPart& part : p.parts) {
    if (options_.on_linear_input) options_.on_linear_input(part.linear.name(), x);
    QL_RETURN_IF_ERROR(part.linear.run(x, out.slice_cols(part.col, part.linear.N()), ctx_, fusion));
  }
  return Status::ok_status();
}

Status DeviceDecoder::run_row(const RowProjection& p, ConstMatrixView x, MatrixView out,
                              const LinearFusion& fusion) {
  if (options_.on_linear_input) options_.on_linear_input(p.linear->name(), x);
  return p.linear->run(x, out, ctx_, fusion);
}

bool DeviceDecoder::fuse_norm(const RowProjection& before, int64_t rows,
                              const ColumnProjection& after, int64_t after_rows) const {
  const StepSkips& skip = step_skips();
  if (!norm_fusion_enabled(options_, rows) || options_.tp != 1 ||
      options_.act_dtype == DType::kF16 || options_.on_linear_input || skip.norm || skip.qkv ||
      skip.o || skip.gate_up || skip.down || skip.lm_head) {
    return false;
  }
  if (!before.linear || before.pad_front != 0 || !before.linear->fusion_at(rows).add_norm) {
    return false;
  }
  return std::all_of(after.parts.begin(), after.parts.end(),
                     [&](const ColumnPart& part) { return part.linear.fusion_at(after_rows).rms; });
}

// A kernel offers the SwiGLU only for a layer created with swiglu_halves, which place_part asks
// for only when the fusion is enabled and the layer is a gate_up shard of exactly [gate | up]
// (gate_up_halves; check_complete holds each half to inter_per_rank_), so fusion_at says it all.
bool DeviceDecoder::fuse_swiglu(const ColumnProjection& gate_up, int64_t rows) const {
  const StepSkips& skip = step_skips();
  if (options_.on_linear_input || skip.gate_up || skip.silu || gate_up.parts.size() != 1) {
    return false;
  }
  return gate_up.parts.front().linear.fusion_at(rows).swiglu;
}

bool DeviceDecoder::every_linear_capturable() const {
  auto column = [](const ColumnProjection& p) {
    return std::all_of(p.parts.begin(), p.parts.end(),
                       [](const ColumnPart& part) { return part.linear.capturable(); });
  };
  auto row = [](const RowProjection& p) { return p.linear.has_value() && p.linear->capturable(); };
  for (const Layer& layer : layers_) {
    for (const RankLayer& rank : layer.ranks) {
      if (!column(rank.qkv) || !column(rank.gate_up) || !row(rank.o) || !row(rank.down)) {
        return false;
      }
    }
  }
  return std::all_of(lm_head_.begin(), lm_head_.end(), column);
}

Status DeviceDecoder::queue_step(int64_t T, bool all_logits, int64_t first_sequence,
                                 int64_t rows_per_sequence, bool greedy) {
  const ModelConfig& c = config_;
  const ConstMatrixView ids = tokens_.matrix().slice_rows(0, 1).slice_cols(0, T);
  const ConstMatrixView pos = tokens_.matrix().slice_rows(1, 1).slice_cols(0, T);
  const MatrixView x = hidden_.matrix().slice_rows(0, T);
  const MatrixView normed = normed_.matrix().slice_rows(0, T);
  const MatrixView delta = delta_.matrix().slice_rows(0, T);
  const MatrixView partial = partial_.matrix().slice_rows(0, T);
  const float eps = static_cast<float>(c.rms_eps);
  const int tp = options_.tp;
  const int64_t d = c.head_dim;
  const StepSkips& skip = step_skips();
  // The fused norm (fuse_norm): the layer before it writes the residual, the norm's unscaled
  // input into `normed` and the partial sums of squares; the layer after scales by 1 / rms.
  const MatrixView sums = norm_sums_.matrix().slice_rows(0, T);
  auto add_norm = [&](const Tensor& weight) {
    LinearFusion f;
    f.add_norm = AddNormEpilogue{x, weight.matrix(), normed, sums};
    return f;
  };
  auto rms = [&](int64_t first_row, int64_t rows) {
    LinearFusion f;
    f.rms = RmsPrologue{sums.slice_rows(first_row, rows), c.hidden, eps};
    return f;
  };
  bool normed_unscaled = false;  // `normed` holds a fused norm's input (the layer before fused it)

  QL_RETURN_IF_ERROR(ops_->embed(embed_, ids, x));
  if (!skip.norm) {
    QL_RETURN_IF_ERROR(ops_->rms_norm(x, layers_.front().input_norm.matrix(), eps, normed));
  }
  KvCacheView cache{c.layers,         options_.ctx,   c.kv_heads,         d,
                    kv_k_.matrix(),   kv_v_.matrix(), options_.sequences, first_sequence,
                    rows_per_sequence};
  if (kv_k_scale_.data() != nullptr) {
    cache.k_scale = kv_k_scale_.matrix();
    cache.v_scale = kv_v_scale_.matrix();
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    const Layer& layer = layers_[static_cast<std::size_t>(l)];
    const bool fuse_after_o = fuse_norm(layer.ranks.front().o, T, layer.ranks.front().gate_up, T);
    // The layer after down_proj: the next layer's q/k/v, or the lm_head on the rows it reads.
    const bool last_layer = l + 1 == c.layers;
    const int64_t lm_rows = all_logits ? T : 1;
    const bool fuse_after_down =
        last_layer ? fuse_norm(layer.ranks.front().down, T, lm_head_.front(), lm_rows)
                   : fuse_norm(layer.ranks.front().down, T,
                               layers_[static_cast<std::size_t>(l + 1)].ranks.front().qkv, T);
    if (options_.on_norm) {
      options_.on_norm(T, fuse_after_o);
      options_.on_norm(T, fuse_after_down);
    }
    // Attention: every rank on its heads, the o_proj partials summed into delta.
    for (int r = 0; r < tp; ++r) {
      const RankLayer& rank = layer.ranks[static_cast<std::size_t>(r)];
      const auto ri = static_cast<std::size_t>(r);
      const MatrixView qkv = qkv_buf_[ri].matrix().slice_rows(0, T);
      if (!skip.qkv) {
        QL_RETURN_IF_ERROR(
            run_column(rank.qkv, normed, qkv, normed_unscaled ? rms(0, T) : LinearFusion{}));
      }
      const MatrixView q = qkv.slice_cols(rank.qkv.slots[0]->begin, rank.qkv.slots[0]->size);
      const MatrixView k = qkv.slice_cols(rank.qkv.slots[1]->begin, rank.qkv.slots[1]->size);
      const MatrixView v = qkv.slice_cols(rank.qkv.slots[2]->begin, rank.qkv.slots[2]->size);
      if (c.qk_norm) {
        QL_RETURN_IF_ERROR(ops_->head_rms_norm(q, d, layer.q_norm.matrix(), eps));
        QL_RETURN_IF_ERROR(ops_->head_rms_norm(k, d, layer.k_norm.matrix(), eps));
      }
      KvCacheView rank_cache = cache;
      rank_cache.kv_heads = kv_heads_per_rank_;
      rank_cache.k = cache.k.slice_cols(r * kv_heads_per_rank_ * d, kv_heads_per_rank_ * d);
      rank_cache.v = cache.v.slice_cols(r * kv_heads_per_rank_ * d, kv_heads_per_rank_ * d);
      if (cache.fp8()) {
        rank_cache.k_scale = cache.k_scale.slice_cols(r * kv_heads_per_rank_, kv_heads_per_rank_);
        rank_cache.v_scale = cache.v_scale.slice_cols(r * kv_heads_per_rank_, kv_heads_per_rank_);
      }
      if (!skip.rope_kv) {
        QL_RETURN_IF_ERROR(ops_->rope_store_kv(q, k, v, d, pos, rope_, rank_cache, l));
      }
      const MatrixView attn = attn_buf_[ri].matrix().slice_rows(0, T);
      // A decode forward (one row per sequence) writes only each row's own position; its
      // positions were uploaded and the earlier rows written by earlier forwards (run_rows).
      const AttentionShape shape{heads_per_rank_, kv_heads_per_rank_, d,
                                 c.layer_is_sliding(l) ? c.sliding_window : 0,
                                 T == 1 || rows_per_sequence == 1};
      if (r == 0 && options_.on_attention) options_.on_attention(T, shape.settled_history);
      if (!skip.attention) {
        QL_RETURN_IF_ERROR(ops_->attention(q, pos, rank_cache, l, shape,
                                           attn.slice_cols(rank.o.pad_front, heads_per_rank_ * d)));
      }
      if (fuse_after_o) {
        QL_RETURN_IF_ERROR(run_row(rank.o, attn, delta, add_norm(layer.post_norm)));
        continue;
      }
      if (!skip.o) QL_RETURN_IF_ERROR(run_row(rank.o, attn, r == 0 ? delta : partial));
      if (r > 0) QL_RETURN_IF_ERROR(ops_->add(delta, partial));
    }
    if (!skip.norm && !fuse_after_o) {
      QL_RETURN_IF_ERROR(ops_->add_rms_norm(x, delta, layer.post_norm.matrix(), eps, normed));
    }
    // The norm after the MLP: the next layer's input norm, or the final norm.
    const Tensor& next =
        l + 1 < c.layers ? layers_[static_cast<std::size_t>(l + 1)].input_norm : final_norm_;
    // MLP: every rank on its slice of the intermediate size, the down_proj partials summed.
    for (int r = 0; r < tp; ++r) {
      const RankLayer& rank = layer.ranks[static_cast<std::size_t>(r)];
      const auto ri = static_cast<std::size_t>(r);
      const MatrixView gu = gate_up_buf_[ri].matrix().slice_rows(0, T);
      const MatrixView act = act_buf_[ri].matrix().slice_rows(0, T);
      // gate_up may end with the SiLU-gated product itself (fuse_swiglu).
      const bool swiglu = fuse_swiglu(rank.gate_up, T);
      if (r == 0 && options_.on_swiglu) options_.on_swiglu(T, swiglu);
      if (!skip.gate_up) {
        LinearFusion f = fuse_after_o ? rms(0, T) : LinearFusion{};
        if (swiglu) f.swiglu = SwiGluEpilogue{act.slice_cols(rank.down.pad_front, inter_per_rank_)};
        QL_RETURN_IF_ERROR(run_column(rank.gate_up, normed, gu, f));
      }
      if (!skip.silu && !swiglu) {
        QL_RETURN_IF_ERROR(
            ops_->silu_mul(gu.slice_cols(rank.gate_up.slots[0]->begin, rank.gate_up.slots[0]->size),
                           gu.slice_cols(rank.gate_up.slots[1]->begin, rank.gate_up.slots[1]->size),
                           act.slice_cols(rank.down.pad_front, inter_per_rank_)));
      }
      if (fuse_after_down) {
        QL_RETURN_IF_ERROR(run_row(rank.down, act, delta, add_norm(next)));
        continue;
      }
      if (!skip.down) QL_RETURN_IF_ERROR(run_row(rank.down, act, r == 0 ? delta : partial));
      if (r > 0) QL_RETURN_IF_ERROR(ops_->add(delta, partial));
    }
    if (!skip.norm && !fuse_after_down) {
      QL_RETURN_IF_ERROR(ops_->add_rms_norm(x, delta, next.matrix(), eps, normed));
    }
    normed_unscaled = fuse_after_down;
  }
  // The lm_head of the rows asked for, each rank's vocabulary slice into its buffer.
  const ConstMatrixView last = all_logits ? ConstMatrixView(normed) : normed.slice_rows(T - 1, 1);
  for (std::size_t r = 0; r < lm_head_.size(); ++r) {
    const MatrixView out = lm_buf_[r].matrix().slice_rows(0, last.rows());
    if (!skip.lm_head) {
      QL_RETURN_IF_ERROR(
          run_column(lm_head_[r], last, out,
                     normed_unscaled ? rms(T - last.rows(), last.rows()) : LinearFusion{}));
    }
  }
  if (greedy) {
    const ColumnWindow& vocab = *lm_head_.front().slots[0];
    QL_RETURN_IF_ERROR(ops_->argmax(
        lm_buf_.front().matrix().slice_rows(0, last.rows()).slice_cols(vocab.begin, vocab.size),
        argmax_ids_.matrix().slice_cols(0, last.rows())));
  }
  return Status::ok_status();
}

Result<bool> DeviceDecoder::replay_decode_step(int64_t B, bool greedy) {
  const int64_t key = 2 * B + (greedy ? 1 : 0);
  auto it = steps_.find(key);
  if (it == steps_.end() && eager_decode_steps_[key] < 1) {
    // The first step at this B runs launch by launch: kernels that set themselves up on their
    // first call at this M (a cuBLASLt heuristic, a workspace) do it outside the recording.
    ++eager_decode_steps_[key];
    return false;
  }
  if (it == steps_.end()) {
    auto recorded = dc_->record([&] { return queue_step(B, B > 1, 0, 1, greedy); });
    if (!recorded.ok()) {
      // Recording is an optimisation: the step runs launch by launch from now on (an error of
      // the step itself shows again there).
      record_decode_ = false;
      why_eager_ = "recording failed: " + recorded.status().message();
      log_message(LogLevel::kVerbose, "run",
                  fmt::format("{}: the decode step runs launch by launch: {}", where_,
                              recorded.status().message()));
      return false;
    }
    it = steps_.emplace(key, std::move(recorded).value()).first;
  }
  QL_RETURN_IF_ERROR(it->second->replay());
  return true;
}

Status DeviceDecoder::run_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                               int64_t start, int64_t first_sequence, int64_t rows_per_sequence,
                               bool all_logits, int64_t decode_rows, MatrixView logits,
                               std::span<int32_t> greedy_ids) {
  const auto T = static_cast<int64_t>(tokens.size());
  const int64_t out_rows = all_logits ? T : 1;
  const bool greedy = !greedy_ids.empty();
  if (greedy && static_cast<int64_t>(greedy_ids.size()) != out_rows) {
    return make_error(ErrorCode::kInvalidArgument, "forward: {} ids for {} rows", greedy_ids.size(),
                      out_rows);
  }
  if (greedy && !device_argmax()) {
    // The ranks' vocabulary slices meet on the host: the logits come down, greedy_token picks
    // (into a buffer kept across steps, so a decode step allocates nothing).
    std::vector<float>& rows = split_vocab_logits_;
    rows.resize(static_cast<std::size_t>(out_rows * config_.vocab));
    QL_RETURN_IF_ERROR(run_rows(
        tokens, positions, start, first_sequence, rows_per_sequence, all_logits, decode_rows,
        MatrixView::dense(rows.data(), DType::kF32, out_rows, config_.vocab)));
    for (int64_t r = 0; r < out_rows; ++r) {
      greedy_ids[static_cast<std::size_t>(r)] = greedy_token(std::span<const float>(rows).subspan(
          static_cast<std::size_t>(r * config_.vocab), static_cast<std::size_t>(config_.vocab)));
    }
    return Status::ok_status();
  }
  // `logits` without data: they stay in lm_buf_ (forward_sampled samples them there).
  const bool keep_on_device = !greedy && logits.data() == nullptr;
  if (!greedy && !keep_on_device &&
      (logits.rows() != out_rows || logits.cols() != config_.vocab ||
       logits.dtype() != DType::kF32)) {
    return make_error(ErrorCode::kInvalidArgument, "forward: logits must be f32 [{}, {}]", out_rows,
                      config_.vocab);
  }
  // Token ids and positions: written in place on the cpu, staged and uploaded for a device.
  // [2, max_rows] like tokens_, so one upload carries both rows.
  int32_t* ids_at = on_host() ? tokens_.data_as<int32_t>() : host_ids_.data_as<int32_t>();
  int32_t* pos_at = ids_at + options_.max_rows;
  std::copy(tokens.begin(), tokens.end(), ids_at);
  for (int64_t t = 0; t < T; ++t) {
    pos_at[t] = positions.empty() ? static_cast<int32_t>(start + t)
                                  : positions[static_cast<std::size_t>(t)];
  }
  if (!on_host()) {
    // Both rows in one copy (each copy waits for the device: one round trip, not two); a decode
    // step's T is 1, so the block is mostly unused ids, which cost nothing to send.
    const auto bytes = static_cast<std::size_t>(options_.max_rows + T) * sizeof(int32_t);
    QL_RETURN_IF_ERROR(dc_->upload(tokens_.data(), 0, ids_at, bytes));
  }
  bool replayed = false;
  if (decode_rows > 0 && record_decode_) {
    QL_ASSIGN_OR_RETURN(replayed, replay_decode_step(decode_rows, greedy));
  }
  if (!replayed) {
    QL_RETURN_IF_ERROR(queue_step(T, all_logits, first_sequence, rows_per_sequence, greedy));
  }
  if (greedy) {
    const std::size_t bytes = greedy_ids.size() * sizeof(int32_t);
    const int32_t* ids = argmax_ids_.data_as<int32_t>();
    if (!on_host()) {
      // The download is queued behind the step on the same queue and waits for it.
      QL_RETURN_IF_ERROR(dc_->download(host_argmax_.data(), argmax_ids_.data(), 0, bytes));
      ids = host_argmax_.data_as<int32_t>();
    }
    std::copy(ids, ids + greedy_ids.size(), greedy_ids.begin());
    return Status::ok_status();
  }
  if (keep_on_device) return Status::ok_status();
  return logits_to_host(out_rows, logits);
}

Status DeviceDecoder::logits_to_host(int64_t out_rows, MatrixView logits) {
  // Logits of the rows asked for, each rank's vocabulary slice into its columns (through the
  // host staging buffer when `logits` is host memory the device cannot write).
  int64_t column = 0;
  for (std::size_t r = 0; r < lm_head_.size(); ++r) {
    const ColumnProjection& lm = lm_head_[r];
    const MatrixView out = lm_buf_[r].matrix().slice_rows(0, out_rows);
    const MatrixView dst = logits.slice_cols(column, lm.slots[0]->size);
    if (on_host()) {
      QL_RETURN_IF_ERROR(ops_->copy(out.slice_cols(lm.slots[0]->begin, lm.slots[0]->size), dst));
    } else {
      QL_RETURN_IF_ERROR(download_window(out, *lm.slots[0], dst));
    }
    column += lm.slots[0]->size;
  }
  return Status::ok_status();
}

Status DeviceDecoder::check_rows(int64_t sequence, std::span<const int32_t> tokens,
                                 int64_t start) const {
  const auto T = static_cast<int64_t>(tokens.size());
  if (T < 1 || T > options_.max_rows) {
    return make_error(ErrorCode::kInvalidArgument, "forward: {} tokens; 1 to {} per call", T,
                      options_.max_rows);
  }
  if (sequence < 0 || sequence >= options_.sequences) {
    return make_error(ErrorCode::kInvalidArgument,
                      "forward: sequence {} of a KV cache of {} sequences (--batch)", sequence,
                      options_.sequences);
  }
  if (start < 0 || start + T > options_.ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "forward: positions {}..{} do not fit the context of {} (--ctx)", start,
                      start + T - 1, options_.ctx);
  }
  return Status::ok_status();
}

Status DeviceDecoder::forward_sequence(int64_t sequence, std::span<const int32_t> tokens,
                                       int64_t start, bool all_logits, MatrixView logits) {
  QL_RETURN_IF_ERROR(check_rows(sequence, tokens, start));
  const auto T = static_cast<int64_t>(tokens.size());
  // Sequence 0's one-token step is the recorded decode step of one row.
  const int64_t decode_rows = T == 1 && !all_logits && sequence == 0 ? 1 : 0;
  return run_rows(tokens, {}, start, sequence, 0, all_logits, decode_rows, logits);
}

Result<int32_t> DeviceDecoder::forward_greedy(std::span<const int32_t> tokens, int64_t start) {
  int32_t id = 0;
  QL_RETURN_IF_ERROR(check_rows(0, tokens, start));
  const int64_t decode_rows = tokens.size() == 1 ? 1 : 0;
  QL_RETURN_IF_ERROR(
      run_rows(tokens, {}, start, 0, 0, false, decode_rows, MatrixView(), std::span(&id, 1)));
  return id;
}

Status DeviceDecoder::mark_seen(std::span<const int32_t> seen) {
  const int64_t vocab = config_.vocab;
  if (seen_flags_.data() == nullptr) {
    QL_ASSIGN_OR_RETURN(seen_flags_, device_tensor(DType::kU8, 1, (vocab + 3) / 4 * 4));
    QL_RETURN_IF_ERROR(dc_->fill(seen_flags_.data(), 0, 0, seen_flags_.nbytes()));
    seen_host_.assign(static_cast<std::size_t>(vocab), 0);
    seen_marked_.clear();
  }
  const bool extends = seen.size() >= seen_marked_.size() &&
                       std::equal(seen_marked_.begin(), seen_marked_.end(), seen.begin());
  if (!extends) {
    std::fill(seen_host_.begin(), seen_host_.end(), uint8_t{0});
    seen_marked_.clear();
  }
  // New flags one byte each, or the whole row when many changed (a prompt, a new sequence).
  std::vector<int32_t> fresh;
  for (std::size_t i = seen_marked_.size(); i < seen.size(); ++i) {
    const int32_t id = seen[i];
    seen_marked_.push_back(id);
    if (id < 0 || id >= vocab || seen_host_[static_cast<std::size_t>(id)] != 0) continue;
    seen_host_[static_cast<std::size_t>(id)] = 1;
    fresh.push_back(id);
  }
  if (!extends || fresh.size() > 16) {
    return dc_->upload(seen_flags_.data(), 0, seen_host_.data(), seen_host_.size());
  }
  for (int32_t id : fresh) {
    QL_RETURN_IF_ERROR(dc_->upload(seen_flags_.data(), static_cast<std::size_t>(id),
                                   &seen_host_[static_cast<std::size_t>(id)], 1));
  }
  return Status::ok_status();
}

Result<int32_t> DeviceDecoder::forward_sampled(std::span<const int32_t> tokens, int64_t start,
                                               const SamplingOptions& options,
                                               std::span<const int32_t> seen, uint64_t step) {
  QL_RETURN_IF_ERROR(check_sampling(options));
  QL_RETURN_IF_ERROR(check_rows(0, tokens, start));
  const int64_t vocab = config_.vocab;
  const int64_t decode_rows = tokens.size() == 1 ? 1 : 0;
  const bool on_device = device_sampling();
  const bool penalty = options.repetition_penalty != 1.0;
  if (on_device && penalty) QL_RETURN_IF_ERROR(mark_seen(seen));
  // The logits stay where the step wrote them until the op or the host needs them.
  QL_RETURN_IF_ERROR(run_rows(tokens, {}, start, 0, 0, false, decode_rows, MatrixView()));
  if (on_device) {
    const ColumnProjection& lm = lm_head_[0];
    const ConstMatrixView logits =
        lm_buf_[0].matrix().slice_rows(0, 1).slice_cols(lm.slots[0]->begin, lm.slots[0]->size);
    const ConstMatrixView flags =
        penalty ? ConstMatrixView(seen_flags_.matrix().slice_cols(0, vocab)) : ConstMatrixView();
    const Status sampled =
        ops_->sample(logits, flags, options, step, argmax_ids_.matrix().slice_cols(0, 1));
    if (sampled.ok()) {
      const int32_t* id = argmax_ids_.data_as<int32_t>();
      if (!on_host()) {
        // Queued behind the sample kernel on the same queue: the download waits for it.
        QL_RETURN_IF_ERROR(dc_->download(host_argmax_.data(), argmax_ids_.data(), 0, sizeof *id));
        id = host_argmax_.data_as<int32_t>();
      }
      if (*id >= 0) {
        ++sampled_on_device_;
        return *id;
      }
      ++left_to_host_;  // past the device's ordered candidates: the host decides
    } else if (sampled.code() == ErrorCode::kUnsupported) {
      sample_unsupported_ = true;
    } else {
      return sampled;
    }
  }
  // On the host: the row comes down (each rank's vocabulary slice into its columns).
  sample_row_.resize(static_cast<std::size_t>(vocab));
  QL_RETURN_IF_ERROR(
      logits_to_host(1, MatrixView::dense(sample_row_.data(), DType::kF32, 1, vocab)));
  ++sampled_on_host_;
  return sample_token(sample_row_, seen, options, step);
}

Status DeviceDecoder::decode_batch_greedy(std::span<const int32_t> tokens,
                                          std::span<const int32_t> positions,
                                          std::span<int32_t> ids) {
  QL_RETURN_IF_ERROR(check_batch(tokens, positions));
  if (ids.size() != tokens.size()) {
    return make_error(ErrorCode::kInvalidArgument, "decode_batch: {} ids for {} tokens", ids.size(),
                      tokens.size());
  }
  return run_rows(tokens, positions, 0, 0, 1, true, static_cast<int64_t>(tokens.size()),
                  MatrixView(), ids);
}

Status DeviceDecoder::check_batch(std::span<const int32_t> tokens,
                                  std::span<const int32_t> positions) const {
  const auto B = static_cast<int64_t>(tokens.size());
  const int64_t most = std::min(options_.sequences, options_.max_rows);
  if (B < 1 || B > most) {
    return make_error(ErrorCode::kInvalidArgument,
                      "decode_batch: {} sequences; 1 to {} (the KV cache's {} sequences, {} rows "
                      "per call)",
                      B, most, options_.sequences, options_.max_rows);
  }
  if (positions.size() != tokens.size()) {
    return make_error(ErrorCode::kInvalidArgument, "decode_batch: {} positions for {} tokens",
                      positions.size(), tokens.size());
  }
  for (std::size_t s = 0; s < positions.size(); ++s) {
    if (positions[s] < 0 || positions[s] >= options_.ctx) {
      return make_error(ErrorCode::kInvalidArgument,
                        "decode_batch: sequence {}'s position {} does not fit the context of {} "
                        "(--ctx)",
                        s, positions[s], options_.ctx);
    }
  }
  return Status::ok_status();
}

Status DeviceDecoder::decode_batch(std::span<const int32_t> tokens,
                                   std::span<const int32_t> positions, MatrixView logits) {
  QL_RETURN_IF_ERROR(check_batch(tokens, positions));
  const auto B = static_cast<int64_t>(tokens.size());
  return run_rows(tokens, positions, 0, 0, 1, true, B, logits);
}

// A decoder together with the weight source whose mapped memory (the embeddings) it reads.
class OwningDecoder final : public Decoder {
 public:
  OwningDecoder(std::unique_ptr<DecoderWeights> weights, std::unique_ptr<Decoder> decoder)
      : weights_(std::move(weights)), decoder_(std::move(decoder)) {}
  const ModelConfig& config() const override { return decoder_->config(); }
  std::string decode_step() const override { return decoder_->decode_step(); }
  std::string sampled_where() const override { return decoder_->sampled_where(); }
  int64_t max_rows() const override { return decoder_->max_rows(); }
  int64_t context() const override { return decoder_->context(); }
  Status forward(std::span<const int32_t> tokens, int64_t start, bool all_logits,
                 MatrixView logits) override {
    return decoder_->forward(tokens, start, all_logits, logits);
  }
  int64_t sequences() const override { return decoder_->sequences(); }
  Status forward_sequence(int64_t sequence, std::span<const int32_t> tokens, int64_t start,
                          bool all_logits, MatrixView logits) override {
    return decoder_->forward_sequence(sequence, tokens, start, all_logits, logits);
  }
  Status decode_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                      MatrixView logits) override {
    return decoder_->decode_batch(tokens, positions, logits);
  }
  Result<int32_t> forward_greedy(std::span<const int32_t> tokens, int64_t start) override {
    return decoder_->forward_greedy(tokens, start);
  }
  Status decode_batch_greedy(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                             std::span<int32_t> ids) override {
    return decoder_->decode_batch_greedy(tokens, positions, ids);
  }
  Result<int32_t> forward_sampled(std::span<const int32_t> tokens, int64_t start,
                                  const SamplingOptions& options, std::span<const int32_t> seen,
                                  uint64_t step) override {
    return decoder_->forward_sampled(tokens, start, options, seen, step);
  }
  std::vector<DecoderLayerKernels> kernels() const override { return decoder_->kernels(); }
  uint64_t weight_bytes() const override { return decoder_->weight_bytes(); }
  double load_seconds() const override { return decoder_->load_seconds(); }

 private:
  std::unique_ptr<DecoderWeights> weights_;
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace

Result<std::unique_ptr<Decoder>> Decoder::create(DecoderWeights& weights, const Device& device,
                                                 const DecoderOptions& options) {
  auto decoder = std::make_unique<DeviceDecoder>();
  QL_RETURN_IF_ERROR(decoder->load(weights, device, options));
  return std::unique_ptr<Decoder>(std::move(decoder));
}

Result<std::unique_ptr<Decoder>> Decoder::load(const std::string& dir, const Device& device,
                                               const DecoderOptions& options) {
  QL_ASSIGN_OR_RETURN(std::unique_ptr<DecoderWeights> weights,
                      checkpoint_weights(dir, options.quantization));
  // The decoder keeps what it needs (the mapped embeddings stay valid through `weights`).
  QL_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, create(*weights, device, options));
  return std::unique_ptr<Decoder>(new OwningDecoder(std::move(weights), std::move(decoder)));
}

}  // namespace qlinear
