// The decoder of a Hugging Face checkpoint (Llama, Mistral, Qwen2, Qwen3) on one device: its
// weights loaded and converted one layer at a time into Linear layers (kernels from the
// registry), a preallocated KV cache, and the forward of a chunk of tokens written against the
// backend's DecoderOps. `tp` > 1 runs that many tensor-parallel ranks in one process (column- and
// row-parallel as shard/ defines them, row-parallel partials summed), any tp size: a group or FP8
// block straddling two ranks is taken whole by both with zero rows (shard/plan_shard).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "core/tensor.h"
#include "model/model_config.h"
#include "model/sampler.h"
#include "qlinear/device.h"
#include "qlinear/linear.h"
#include "qlinear/view.h"

namespace qlinear {

struct DecoderOptions {
  SelectionPolicy policy;
  std::string quantization;  // "" or "fp8" (online FP8 of an unquantized checkpoint)
  int tp = 1;
  int64_t ctx = 4096;             // KV cache positions (per sequence)
  int64_t sequences = 1;          // sequences the KV cache holds (batched decode: --batch)
  int64_t max_rows = 128;         // tokens per forward call (longer prompts are fed in chunks)
  DType act_dtype = DType::kF32;  // what linear layers read (f32: transformers' f32 numerics)
  DType kv_dtype = DType::kF32;   // the KV cache: f32, bf16 or f8_e4m3fn (model/kv_fp8.h)
  int threads = 0;                // CPU threads, 0: all cores
  bool progress = true;           // a loading bar on a terminal
  // On a GPU, record the one-token decode step once (a CUDA graph) and replay it every token;
  // off: every kernel is launched from the host each token (the eager path, for comparison).
  bool record_decode = true;
  // Called with each linear layer's input rows just before the layer runs (cpu, tp 1): how
  // `qlinear quantize` collects calibration statistics. Unset: never called.
  std::function<void(std::string_view layer, ConstMatrixView x)> on_linear_input;
  // Called before each layer's attention (rank 0) with the forward's rows and whether it
  // declares a settled history (model/ops.h AttentionShape::settled_history): tests check what a
  // forward promises the backends. Unset: never called.
  std::function<void(int64_t rows, bool settled_history)> on_attention;
  // Let the linear layers on each side of a residual add + RMSNorm do it when their kernels can
  // (docs/runner.md "The norm inside the linear layers"), in forwards of at most
  // norm_fusion_max_rows rows: it pays at one row and costs above (H100, 8B W4A16 decode with the
  // SwiGLU fusion: +2-4% at batch 1, -3% at 4, -8% at 16; bench/results/h100-fusions-2026-12-06).
  // QLINEAR_NORM_FUSION=1 turns it on at every row count, =0 off.
  bool fuse_norms = true;
  int64_t norm_fusion_max_rows = 1;
  // Called for each residual add + RMSNorm after a layer's attention or MLP with the forward's
  // rows and whether the linear layers around it did it (tests check when it is fused). Unset:
  // never called.
  std::function<void(int64_t rows, bool fused)> on_norm;
  // Let a fused [gate | up] layer end with the SiLU-gated product when its kernel can (docs/
  // runner.md "The SwiGLU inside gate_up"): the layer is prepared with its columns paired
  // (LinearOptions::swiglu_halves) and the decoder's silu_mul launch goes away.
  // The fused decoder's logits are the unfused one's bit for bit with bf16 activations. 8B W4A16
  // decode on an H100: alone within the runs' +-2% noise at batches 1, 4 and 16; with the norm
  // fusion at batch 1 377-379 tok/s against 356-370 with neither
  // (bench/results/h100-fusions-2026-12-06).
  // QLINEAR_SWIGLU_FUSION=1 / 0 overrides it.
  bool fuse_swiglu = true;
  // Called for each layer's MLP with the forward's rows and whether gate_up did the SwiGLU
  // (tests). Unset: never called.
  std::function<void(int64_t rows, bool fused)> on_swiglu;
};

// Where a decoder's weights come from: a checkpoint folder (checkpoint_weights.cc), or random
// weights of a real model's shapes held in memory (bench-model --synthetic).
class DecoderWeights {
 public:
  virtual ~DecoderWeights() = default;
  virtual const ModelConfig& config() const = 0;
  // For messages: the folder, or "synthetic llama3-8b".
  virtual std::string where() const = 0;
  // The embedding table [vocab, hidden] (f32, bf16 or f16) in host memory that stays valid.
  virtual Result<ConstMatrixView> embeddings() = 0;
  // A norm weight "model.norm.weight" / "model.layers.3.input_layernorm.weight" as f32 [1, n].
  virtual Result<Tensor> norm(const std::string& name, int64_t n) = 0;
  // Every linear layer, converted one at a time (fused, or unfused shards with the reason), the
  // lm_head included (tied to the embeddings where the config says so).
  virtual Status for_each_linear(
      const std::function<Status(const Canonical& part, const std::string& note)>& fn) = 0;
};

// The weights of a Hugging Face checkpoint folder (`quantization`: "" or "fp8").
Result<std::unique_ptr<DecoderWeights>> checkpoint_weights(const std::string& dir,
                                                           const std::string& quantization);

// One linear layer as it runs: its kernel per range of M, per rank.
struct DecoderLayerKernels {
  std::string name;
  int rank = 0;
  std::vector<LinearBucket> buckets;
  std::string note;  // unfused, or TP padding
};

class Decoder {
 public:
  // Opens `dir`, checks the config against the tensors it uses, and prepares every layer on
  // `device`. Errors name the file, tensor or key.
  static Result<std::unique_ptr<Decoder>> load(const std::string& dir, const Device& device,
                                               const DecoderOptions& options);
  // The same from any weight source.
  static Result<std::unique_ptr<Decoder>> create(DecoderWeights& weights, const Device& device,
                                                 const DecoderOptions& options);
  virtual ~Decoder() = default;

  virtual const ModelConfig& config() const = 0;
  virtual int64_t max_rows() const = 0;  // tokens per forward call
  virtual int64_t context() const = 0;   // positions the KV cache holds
  // Runs tokens at positions [start, start + count) of the sequence (count <= max_rows,
  // start + count <= ctx), appending their keys and values to the cache (positions >= start are
  // overwritten, so a caller may rewind). Writes the logits (f32, host) of every row into
  // logits [count, vocab], or of the last row only into logits [1, vocab].
  virtual Status forward(std::span<const int32_t> tokens, int64_t start, bool all_logits,
                         MatrixView logits) = 0;
  // Sequences the KV cache holds (DecoderOptions::sequences); forward() runs sequence 0.
  virtual int64_t sequences() const = 0;
  // forward() of sequence `sequence` (< sequences()): its own cache rows, its own positions.
  virtual Status forward_sequence(int64_t sequence, std::span<const int32_t> tokens, int64_t start,
                                  bool all_logits, MatrixView logits) = 0;
  // Batched decode: token s of sequence s at position positions[s], for sequences 0 ..
  // tokens.size() - 1 (at most sequences() and max_rows()), one forward whose linear layers run
  // at M = tokens.size(). Writes logits [tokens.size(), vocab] (f32, host). Row s equals
  // forward_sequence(s, ...) of that token alone up to the linear kernels' summation order at
  // that M (the same kernels by M bucket).
  virtual Status decode_batch(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                              MatrixView logits) = 0;
  // Greedy decoding with the argmax taken on the device (DecoderOps::argmax): the ids
  // greedy_token (model/sampler.h) would pick from the logits forward / decode_batch write, while
  // a step downloads one id per row instead of [rows, vocab] floats. forward_greedy: forward()
  // without all_logits, the id of its last row.
  virtual Result<int32_t> forward_greedy(std::span<const int32_t> tokens, int64_t start) = 0;
  virtual Status decode_batch_greedy(std::span<const int32_t> tokens,
                                     std::span<const int32_t> positions,
                                     std::span<int32_t> ids) = 0;
  // Sampling where the logits are: forward() without all_logits, then the token sample_token
  // (model/sampler.h) picks from its last row with `options`, draw index `step` and `seen`, the
  // sequence's tokens so far (the repetition penalty's). The device decoder samples on its device
  // (DecoderOps::sample) and downloads one id; a row the device sampler leaves to the host (-1),
  // a split vocabulary, a backend without the op and QLINEAR_HOST_SAMPLE=1 download the row and
  // sample it on the host.
  virtual Result<int32_t> forward_sampled(std::span<const int32_t> tokens, int64_t start,
                                          const SamplingOptions& options,
                                          std::span<const int32_t> seen, uint64_t step) = 0;
  virtual std::vector<DecoderLayerKernels> kernels() const = 0;
  // Bytes of weights one decode step reads (every linear layer once, the embedding row aside).
  virtual uint64_t weight_bytes() const = 0;
  virtual double load_seconds() const = 0;
  // How a one-token step runs: "CUDA graph" once recorded, else "launch by launch (why)".
  virtual std::string decode_step() const { return "launch by launch"; }
  // Where forward_sampled's picks were made so far: "device N, host M (why)".
  virtual std::string sampled_where() const { return "host"; }
};

}  // namespace qlinear
