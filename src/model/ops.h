// The operations a decoder forward needs besides its linear layers, as one small interface per
// backend: the CPU implements it here (cpu_ops.cc); the CUDA and OpenCL backends add their own
// implementations of the same operations and nothing else. Every view lives in the backend's
// memory; activations and the residual stream are f32 unless a view says otherwise, and norms,
// softmax and attention sums accumulate in f32.
#pragma once

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "core/tensor.h"
#include "model/sampler.h"
#include "model/vector_form.h"
#include "qlinear/device.h"
#include "qlinear/view.h"

namespace qlinear {

// cos and sin of every position and rotary frequency, [positions, head_dim / 2] each, already
// times the rope's attention factor (yarn), in f32 as transformers computes them.
struct RopeTable {
  int64_t positions = 0;
  int64_t half = 0;
  ConstMatrixView cos;
  ConstMatrixView sin;
};

// Keys and values of every layer and sequence for `capacity` positions each: [layers *
// sequences * capacity, kv_heads * head_dim] each, f32 or bf16, or FP8: e4m3 codes with one f32
// scale per cache row and kv head in k_scale / v_scale [rows, kv_heads] (model/kv_fp8.h; empty
// views for f32 and bf16 caches). Sequence s of layer l starts at row (l * sequences + s) *
// capacity (one sequence: layer l at l * capacity).
//
// A call's rows belong to sequences: row t to sequence first_sequence + t / rows_per_sequence,
// or every row to first_sequence when rows_per_sequence is 0 (a prompt chunk of one sequence).
// Batched decode is one row per sequence: first_sequence 0, rows_per_sequence 1.
struct KvCacheView {
  int64_t layers = 0;
  int64_t capacity = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  MatrixView k;
  MatrixView v;
  int64_t sequences = 1;
  int64_t first_sequence = 0;
  int64_t rows_per_sequence = 0;
  MatrixView k_scale{};  // FP8 caches only
  MatrixView v_scale{};

  // Either half FP8 (a well-formed FP8 cache has both: ops_checks::require_fp8_cache).
  bool fp8() const { return k.dtype() == DType::kF8E4M3 || v.dtype() == DType::kF8E4M3; }
  // Layer `layer`'s rows from the call's first sequence on: row t's position p is row
  // cache_row(t, p) of these (and of the scales').
  MatrixView layer_k(int64_t layer) const { return layer_rows(k, layer); }
  MatrixView layer_v(int64_t layer) const { return layer_rows(v, layer); }
  MatrixView layer_k_scale(int64_t layer) const { return layer_rows(k_scale, layer); }
  MatrixView layer_v_scale(int64_t layer) const { return layer_rows(v_scale, layer); }
  int64_t sequence_of(int64_t t) const {
    return first_sequence + (rows_per_sequence > 0 ? t / rows_per_sequence : 0);
  }
  int64_t cache_row(int64_t t, int64_t position) const {
    return (sequence_of(t) - first_sequence) * capacity + position;
  }

 private:
  MatrixView layer_rows(const MatrixView& m, int64_t layer) const {
    return m.slice_rows((layer * sequences + first_sequence) * capacity,
                        (sequences - first_sequence) * capacity);
  }
};

struct AttentionShape {
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t window = 0;  // > 0: each query sees only the last `window` positions (itself included)
  // Every row is its sequence's only row in this forward (decode), and the positions and the
  // cache rows before each row's position were written before this forward began, across a
  // stream-ordered point (an upload, a download, an earlier graph replay): a backend may read
  // them before the operations just before it have finished (the CUDA ops prefetch those keys
  // and values while the RoPE and KV store still runs). Only the row's own position is written
  // by this forward.
  bool settled_history = false;
};

class DecoderOps {
 public:
  virtual ~DecoderOps() = default;

  // out[t, :] = table[ids[t], :] as f32; table rows are f32, bf16 or f16. ids: I32 [1, T].
  virtual Status embed(ConstMatrixView table, ConstMatrixView ids, MatrixView out) = 0;
  // out = x * rsqrt(mean(x^2) + eps) * weight, per row; weight f32 [1, cols]; out f32/bf16/f16.
  virtual Status rms_norm(ConstMatrixView x, ConstMatrixView weight, float eps, MatrixView out) = 0;
  // residual += delta, then out = rms_norm(residual): the residual add fused with the next norm.
  virtual Status add_rms_norm(MatrixView residual, ConstMatrixView delta, ConstMatrixView weight,
                              float eps, MatrixView out) = 0;
  // In place, per head of `head_dim` columns: RMSNorm with weight f32 [1, head_dim] (Qwen3's
  // q_norm and k_norm).
  virtual Status head_rms_norm(MatrixView x, int64_t head_dim, ConstMatrixView weight,
                               float eps) = 0;
  // In place, per head: rotate pairs (i, i + head_dim/2) by the angle of row t's position
  // (positions: I32 [1, T]), transformers' rotate_half convention.
  virtual Status rope(MatrixView x, int64_t head_dim, ConstMatrixView positions,
                      const RopeTable& table) = 0;
  // Writes rows t of k and v [T, kv_heads * head_dim] to cache rows positions[t] of `layer`.
  virtual Status store_kv(ConstMatrixView k, ConstMatrixView v, ConstMatrixView positions,
                          const KvCacheView& cache, int64_t layer) = 0;
  // rope(q), rope(k), then store_kv(k, v): the step between the qkv projection and attention.
  // Backends may do it in one pass (the CUDA ops launch one kernel instead of three); the
  // results are the three operations', bit for bit.
  virtual Status rope_store_kv(MatrixView q, MatrixView k, ConstMatrixView v, int64_t head_dim,
                               ConstMatrixView positions, const RopeTable& table,
                               const KvCacheView& cache, int64_t layer) {
    QL_RETURN_IF_ERROR(rope(q, head_dim, positions, table));
    QL_RETURN_IF_ERROR(rope(k, head_dim, positions, table));
    return store_kv(k, v, positions, cache, layer);
  }
  // out[t, head h] = softmax(q[t, h] . K[0..p_t] / sqrt(d)) V over the layer's cache (causal,
  // grouped-query: head h reads kv head h / (heads / kv_heads), the window if any).
  virtual Status attention(ConstMatrixView q, ConstMatrixView positions, const KvCacheView& cache,
                           int64_t layer, const AttentionShape& shape, MatrixView out) = 0;
  // out = silu(gate) * up, gate and up f32 [T, I], out [T, I].
  virtual Status silu_mul(ConstMatrixView gate, ConstMatrixView up, MatrixView out) = 0;
  // dst += src (residual adds, the sum of row-parallel partials).
  virtual Status add(MatrixView dst, ConstMatrixView src) = 0;
  // dst = src (columns of a column-parallel output into their place; dtype conversion allowed).
  virtual Status copy(ConstMatrixView src, MatrixView dst) = 0;
  // ids[0, t] = greedy_token (model/sampler.h) of row t of f32 logits [T, V]: the first index of
  // the row's maximum, NaN never winning, 0 for a row with nothing above -inf. ids: I32 [1, T].
  // Greedy decoding on the device: a step then returns T ids instead of T x V floats.
  virtual Status argmax(ConstMatrixView logits, MatrixView ids) = 0;
  // ids[0, t] = sample_token (model/sampler.h) of row t of f32 logits [T, V] with `options` and
  // draw index `step`; the repetition penalty applies to the ids whose flag in `seen` (U8
  // [1, V], read only when the penalty is not 1) is non-zero. The logits are not modified. An id
  // of -1: the backend orders only a row's leading candidates and its top-p run or draw reached
  // past them, so the caller samples that row on the host (sampled ids never depend on such a
  // cap). Sampling on the device: a sampled step returns ids, not rows of logits. Backends
  // without it return kUnsupported (the caller then samples every row on the host).
  virtual Status sample(ConstMatrixView logits, ConstMatrixView seen,
                        const SamplingOptions& options, uint64_t step, MatrixView ids);
};

class DeviceContext;

// The host implementation (OpenMP over rows and heads, `threads` 0: all cores). `form`: the SIMD
// form of attention, RMSNorm and SiLU * mul (tests pick each; one the CPU lacks runs portable).
std::unique_ptr<DecoderOps> make_cpu_ops(int threads, VectorForm form = best_vector_form());

// The operations of a device's backend, reading and writing that device's memory on its default
// queue. Backends implement theirs; without the backend compiled in (or before it has decoder
// operations) they return kUnsupported errors naming what is missing (ops_stubs.cc).
Result<std::unique_ptr<DecoderOps>> make_cuda_ops(DeviceContext& context);
Result<std::unique_ptr<DecoderOps>> make_opencl_ops(DeviceContext& context);

// The operations for `context`'s device: cpu, cuda or opencl.
Result<std::unique_ptr<DecoderOps>> make_decoder_ops(DeviceContext& context, int threads);

}  // namespace qlinear
