// The decoder's operations (src/model/ops.h) on one CUDA device: every matrix view lives in that
// device's memory (Location::cuda(i)), the kernels are decoder_ops.cu, decoder_rms_norm.cu and
// decoder_attention.cu (declared in launch.h), and each call only launches on the device's default
// stream (the one the decoder's linear layers run on), so the ops and linear layers of a forward
// follow each other without waits.
//
// Index views (embed's ids, the positions of rope, store_kv and attention) may live in host memory
// or in the device's memory. Host ones are checked as the CPU ops check them (an id outside the
// vocabulary, a position outside the cache or rotary table is an error naming it) and copied to a
// small device buffer, which waits; device ones (what the decoder passes) cannot be read without a
// wait, so the kernels guard them instead (NaN rows for an out-of-range id or position).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/tensor.h"
#include "kernels/cuda/host/cuda_host.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime/cuda_check.h"
#include "kernels/device_context.h"
#include "model/kv_fp8.h"
#include "model/ops.h"
#include "model/ops_checks.h"

namespace qlinear {
namespace {

namespace launch = cuda_launch;
using launch::DecoderMatrix;

using ops_checks::float_dtype;

// The launch form of a view: the address of element (0, 0) (offset() is 0 for CUDA memory; it is
// added anyway so that a view built with one stays right).
DecoderMatrix matrix_of(ConstMatrixView v) {
  return {const_cast<char*>(static_cast<const char*>(v.data())) +
              v.offset() * static_cast<int64_t>(v.element_bytes()),
          v.ld(), cuda_host::dtype_code(v.dtype())};
}

// Layer `layer`'s cache rows from the call's first sequence on, with the row-to-sequence rule
// (and an FP8 cache's scales, model/kv_fp8.h).
launch::DecoderCache cache_of(const KvCacheView& cache, int64_t layer) {
  launch::DecoderCache c{matrix_of(cache.layer_k(layer)), matrix_of(cache.layer_v(layer)),
                         cache.capacity, cache.rows_per_sequence};
  if (cache.fp8()) {
    const MatrixView ks = cache.layer_k_scale(layer);
    const MatrixView vs = cache.layer_v_scale(layer);
    c.k_scale = static_cast<float*>(matrix_of(ks).data);
    c.v_scale = static_cast<float*>(matrix_of(vs).data);
    c.scale_ld = ks.ld();  // v_scale's too (require_cache)
  }
  return c;
}
static_assert(kv_fp8::kScaleFloor == launch::kFp8ActScaleFloor,
              "the FP8 KV cache's scale floor is the activations' (model/kv_fp8.h)");

template <class T>
T* pointer_of(ConstMatrixView v) {
  return static_cast<T*>(matrix_of(v).data);
}

class CudaOps final : public DecoderOps {
 public:
  explicit CudaOps(DeviceContext& device)
      : device_(device), stream_(static_cast<cudaStream_t>(device.default_stream())) {}

  Status embed(ConstMatrixView table, ConstMatrixView ids, MatrixView out) override {
    const int64_t T = ids.cols();
    QL_RETURN_IF_ERROR(require_shape("embed", "out", out, T, table.cols()));
    QL_RETURN_IF_ERROR(require_f32("embed", "out", out));
    QL_RETURN_IF_ERROR(require_device("embed", out, "out"));
    QL_RETURN_IF_ERROR(require_device("embed", table, "the table"));
    QL_RETURN_IF_ERROR(require_float("embed", "the table", table));
    QL_ASSIGN_OR_RETURN(const int32_t* index,
                        indices("embed", ids, table.rows(), [&](int32_t id, int64_t t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "token id {} at position {} is outside the vocabulary "
                                            "[0, {})",
                                            id, t, table.rows());
                        }));
    QL_CUDA(launch::decoder_embed(matrix_of(table), table.rows(), index, T, table.cols(),
                                  matrix_of(out), stream_));
    return Status::ok_status();
  }

  Status rms_norm(ConstMatrixView x, ConstMatrixView weight, float eps, MatrixView out) override {
    return norm("rms_norm", x, ConstMatrixView(), weight, eps, out);
  }

  Status add_rms_norm(MatrixView residual, ConstMatrixView delta, ConstMatrixView weight, float eps,
                      MatrixView out) override {
    QL_RETURN_IF_ERROR(
        require_shape("add_rms_norm", "delta", delta, residual.rows(), residual.cols()));
    QL_RETURN_IF_ERROR(require_device("add_rms_norm", delta, "delta"));
    QL_RETURN_IF_ERROR(require_float("add_rms_norm", "delta", delta));
    // One kernel: the residual add and the norm of its result.
    return norm("add_rms_norm", residual, delta, weight, eps, out);
  }

  Status head_rms_norm(MatrixView x, int64_t head_dim, ConstMatrixView weight, float eps) override {
    QL_RETURN_IF_ERROR(require_f32("head_rms_norm", "x", x));
    QL_RETURN_IF_ERROR(require_device("head_rms_norm", x, "x"));
    QL_RETURN_IF_ERROR(require_shape("head_rms_norm", "weight", weight, 1, head_dim));
    QL_RETURN_IF_ERROR(require_f32("head_rms_norm", "weight", weight));
    QL_RETURN_IF_ERROR(require_device("head_rms_norm", weight, "weight"));
    if (head_dim <= 0 || x.cols() % head_dim != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda ops head_rms_norm: {} columns are not whole heads of {}", x.cols(),
                        head_dim);
    }
    QL_CUDA(launch::decoder_head_rms_norm(matrix_of(x), x.rows(), x.cols() / head_dim, head_dim,
                                          pointer_of<const float>(weight), eps, stream_));
    return Status::ok_status();
  }

  Status rope(MatrixView x, int64_t head_dim, ConstMatrixView positions,
              const RopeTable& table) override {
    QL_ASSIGN_OR_RETURN(const int32_t* index, rope_checks("rope", x, head_dim, positions, table));
    QL_CUDA(launch::decoder_rope(matrix_of(x), x.rows(), x.cols() / head_dim, head_dim, index,
                                 matrix_of(table.cos), matrix_of(table.sin), table.positions,
                                 stream_));
    return Status::ok_status();
  }

  Status store_kv(ConstMatrixView k, ConstMatrixView v, ConstMatrixView positions,
                  const KvCacheView& cache, int64_t layer) override {
    QL_ASSIGN_OR_RETURN(const int32_t* index,
                        store_kv_checks("store_kv", k, v, positions, cache, layer));
    QL_CUDA(launch::decoder_store_kv(matrix_of(k), matrix_of(v), index, k.rows(), cache.kv_heads,
                                     cache.head_dim, cache_of(cache, layer), stream_));
    return Status::ok_status();
  }

  // One kernel for the three (a decode step's launches are a large part of its time).
  // QLINEAR_CUDA_UNFUSED_ROPE=1 runs them as three (a measurement knob).
  Status rope_store_kv(MatrixView q, MatrixView k, ConstMatrixView v, int64_t head_dim,
                       ConstMatrixView positions, const RopeTable& table, const KvCacheView& cache,
                       int64_t layer) override {
    static const bool unfused = [] {
      const char* e = std::getenv("QLINEAR_CUDA_UNFUSED_ROPE");
      return e != nullptr && std::atoi(e) != 0;
    }();
    if (unfused) {
      return DecoderOps::rope_store_kv(q, k, v, head_dim, positions, table, cache, layer);
    }
    constexpr std::string_view op = "rope_store_kv";
    QL_RETURN_IF_ERROR(rope_view_checks(op, q, head_dim, positions, table));
    QL_RETURN_IF_ERROR(rope_view_checks(op, k, head_dim, positions, table));
    QL_RETURN_IF_ERROR(store_kv_view_checks(op, k, v, positions, cache, layer));
    // The positions once, against both limits, with rope's message first as the three ops give.
    QL_ASSIGN_OR_RETURN(
        const int32_t* index,
        indices(op, positions, std::min(table.positions, cache.capacity), [&](int32_t p, int64_t) {
          return p < 0 || p >= table.positions ? rotary_range_error(p, table)
                                               : cache_range_error(p, cache);
        }));
    QL_CUDA(launch::decoder_rope_store_kv(matrix_of(q), matrix_of(k), matrix_of(v), q.rows(),
                                          q.cols() / head_dim, cache.kv_heads, head_dim, index,
                                          matrix_of(table.cos), matrix_of(table.sin),
                                          table.positions, cache_of(cache, layer), stream_));
    return Status::ok_status();
  }

  Status attention(ConstMatrixView q, ConstMatrixView positions, const KvCacheView& cache,
                   int64_t layer, const AttentionShape& shape, MatrixView out) override {
    const int64_t d = shape.head_dim;
    const int64_t T = q.rows();
    QL_RETURN_IF_ERROR(require_f32("attention", "q", q));
    QL_RETURN_IF_ERROR(require_shape("attention", "q", q, T, shape.heads * d));
    QL_RETURN_IF_ERROR(require_shape("attention", "out", out, T, shape.heads * d));
    QL_RETURN_IF_ERROR(require_device("attention", q, "q"));
    QL_RETURN_IF_ERROR(require_device("attention", out, "out"));
    QL_RETURN_IF_ERROR(require_float("attention", "out", out));
    if (d <= 0 || d > launch::kDecoderMaxHeadDim || shape.kv_heads <= 0 ||
        shape.heads % shape.kv_heads != 0 || positions.cols() != T || T > 65535 ||
        cache.head_dim != d || cache.kv_heads != shape.kv_heads) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda ops attention: heads {} / kv heads {} / head_dim {} (at most {}) / "
                        "{} positions for {} rows (at most 65535) over a cache of {} kv heads of "
                        "{}",
                        shape.heads, shape.kv_heads, d, launch::kDecoderMaxHeadDim,
                        positions.cols(), T, cache.kv_heads, cache.head_dim);
    }
    QL_RETURN_IF_ERROR(require_cache("attention", cache, layer, T));
    QL_ASSIGN_OR_RETURN(const int32_t* index,
                        indices("attention", positions, cache.capacity, [&](int32_t p, int64_t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "position {} does not fit the KV cache of {} "
                                            "positions",
                                            p, cache.capacity);
                        }));
    launch::DecoderAttention a;
    a.q = matrix_of(q);
    a.positions = index;
    a.cache = cache_of(cache, layer);
    a.heads = static_cast<int>(shape.heads);
    a.kv_heads = static_cast<int>(shape.kv_heads);
    a.head_dim = static_cast<int>(d);
    a.window = static_cast<int>(std::min<int64_t>(shape.window, cache.capacity));
    a.out = matrix_of(out);
    a.rows = T;
    a.settled = shape.settled_history && prefetch_history();
    a.short_part_keys = short_part_keys();
    // The tensor cores take a prompt chunk unsplit: its 64-row tiles give every head's keys
    // their own blocks (a split would only shorten each block's walk).
    QL_ASSIGN_OR_RETURN(a.mma, mma_attention(a));
    a.grouped = !a.mma && grouped_attention(a);
    if (!a.mma) QL_RETURN_IF_ERROR(split_keys(a));
    QL_CUDA(launch::decoder_attention(a, stream_));
    return Status::ok_status();
  }

  Status silu_mul(ConstMatrixView gate, ConstMatrixView up, MatrixView out) override {
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "gate", gate));
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "up", up));
    const int64_t I = out.cols();
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "gate", gate, out.rows(), I));
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "up", up, out.rows(), I));
    QL_RETURN_IF_ERROR(require_device("silu_mul", gate, "gate"));
    QL_RETURN_IF_ERROR(require_device("silu_mul", up, "up"));
    QL_RETURN_IF_ERROR(require_device("silu_mul", out, "out"));
    QL_RETURN_IF_ERROR(require_float("silu_mul", "out", out));
    QL_CUDA(launch::decoder_silu_mul(matrix_of(gate), matrix_of(up), matrix_of(out), out.rows(), I,
                                     stream_));
    return Status::ok_status();
  }

  Status add(MatrixView dst, ConstMatrixView src) override {
    QL_RETURN_IF_ERROR(require_f32("add", "dst", dst));
    QL_RETURN_IF_ERROR(require_shape("add", "src", src, dst.rows(), dst.cols()));
    QL_RETURN_IF_ERROR(require_device("add", dst, "dst"));
    QL_RETURN_IF_ERROR(require_device("add", src, "src"));
    QL_RETURN_IF_ERROR(require_float("add", "src", src));
    QL_CUDA(launch::decoder_add(matrix_of(dst), matrix_of(src), dst.rows(), dst.cols(), stream_));
    return Status::ok_status();
  }

  Status copy(ConstMatrixView src, MatrixView dst) override {
    QL_RETURN_IF_ERROR(require_shape("copy", "src", src, dst.rows(), dst.cols()));
    QL_RETURN_IF_ERROR(require_device("copy", src, "src"));
    QL_RETURN_IF_ERROR(require_device("copy", dst, "dst"));
    if (!float_dtype(src.dtype()) || !float_dtype(dst.dtype())) {
      return make_error(ErrorCode::kInvalidArgument, "cuda ops copy: {} to {}",
                        dtype_name(src.dtype()), dtype_name(dst.dtype()));
    }
    QL_CUDA(launch::decoder_copy(matrix_of(src), matrix_of(dst), dst.rows(), dst.cols(), stream_));
    return Status::ok_status();
  }

  Status argmax(ConstMatrixView logits, MatrixView ids) override {
    QL_RETURN_IF_ERROR(ops_checks::require_argmax("cuda", logits, ids));
    QL_RETURN_IF_ERROR(require_device("argmax", logits, "logits"));
    QL_RETURN_IF_ERROR(require_device("argmax", ids, "ids"));
    QL_CUDA(launch::decoder_argmax(matrix_of(logits), logits.rows(), logits.cols(),
                                   pointer_of<int32_t>(ids), stream_));
    return Status::ok_status();
  }

  Status sample(ConstMatrixView logits, ConstMatrixView seen, const SamplingOptions& options,
                uint64_t step, MatrixView ids) override {
    QL_RETURN_IF_ERROR(ops_checks::require_sample("cuda", logits, seen, options, ids));
    QL_RETURN_IF_ERROR(require_device("sample", logits, "logits"));
    QL_RETURN_IF_ERROR(require_device("sample", ids, "ids"));
    const bool penalty = options.repetition_penalty != 1.0;
    if (penalty) QL_RETURN_IF_ERROR(require_device("sample", seen, "seen"));
    // A knob for tests and A/B runs (read per call, as the kernels' other knobs).
    const char* select = std::getenv("QLINEAR_SAMPLE_SELECT");
    const bool radix_only = select != nullptr && std::string_view(select) == "radix";
    const launch::SampleParams params{options.temperature,
                                      options.top_p,
                                      options.min_p,
                                      static_cast<float>(options.repetition_penalty),
                                      options.top_k,
                                      options.seed,
                                      step,
                                      radix_only ? 1 : 0};
    QL_CUDA(launch::decoder_sample(matrix_of(logits), logits.rows(), logits.cols(),
                                   penalty ? pointer_of<const uint8_t>(seen) : nullptr, params,
                                   pointer_of<int32_t>(ids), stream_));
    return Status::ok_status();
  }

 private:
  // rms_norm, or add_rms_norm when `delta` has data: x (+= delta) normed into out, one kernel.
  Status norm(std::string_view op, ConstMatrixView x, ConstMatrixView delta, ConstMatrixView weight,
              float eps, MatrixView out) {
    QL_RETURN_IF_ERROR(require_f32(op, "x", x));
    QL_RETURN_IF_ERROR(require_device(op, x, "x"));
    QL_RETURN_IF_ERROR(require_shape(op, "out", out, x.rows(), x.cols()));
    QL_RETURN_IF_ERROR(require_device(op, out, "out"));
    QL_RETURN_IF_ERROR(require_float(op, "out", out));
    QL_RETURN_IF_ERROR(require_shape(op, "weight", weight, 1, x.cols()));
    QL_RETURN_IF_ERROR(require_f32(op, "weight", weight));
    QL_RETURN_IF_ERROR(require_device(op, weight, "weight"));
    const DecoderMatrix d = delta.data() != nullptr ? matrix_of(delta) : DecoderMatrix{};
    QL_CUDA(launch::decoder_rms_norm(matrix_of(x), d, pointer_of<const float>(weight), eps,
                                     matrix_of(out), x.rows(), x.cols(), stream_));
    return Status::ok_status();
  }

  // rope's checks of x, the table and the positions; the positions as the kernels read them.
  Result<const int32_t*> rope_checks(std::string_view op, MatrixView x, int64_t head_dim,
                                     ConstMatrixView positions, const RopeTable& table) {
    QL_RETURN_IF_ERROR(rope_view_checks(op, x, head_dim, positions, table));
    return indices(op, positions, table.positions,
                   [&](int32_t p, int64_t) { return rotary_range_error(p, table); });
  }
  // rope_checks without the positions' values.
  Status rope_view_checks(std::string_view op, MatrixView x, int64_t head_dim,
                          ConstMatrixView positions, const RopeTable& table) {
    QL_RETURN_IF_ERROR(require_f32(op, "x", x));
    QL_RETURN_IF_ERROR(require_device(op, x, "x"));
    const int64_t half = head_dim / 2;
    if (head_dim <= 0 || half != table.half || x.cols() % head_dim != 0 ||
        positions.cols() != x.rows()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda ops {}: x [{}, {}] with head_dim {} and {} positions does not fit "
                        "a table of {} frequencies",
                        op, x.rows(), x.cols(), head_dim, positions.cols(), table.half);
    }
    QL_RETURN_IF_ERROR(require_f32(op, "the cos table", table.cos));
    QL_RETURN_IF_ERROR(require_f32(op, "the sin table", table.sin));
    QL_RETURN_IF_ERROR(require_device(op, table.cos, "the cos table"));
    QL_RETURN_IF_ERROR(require_device(op, table.sin, "the sin table"));
    return Status::ok_status();
  }
  static Status rotary_range_error(int32_t p, const RopeTable& table) {
    return make_error(ErrorCode::kInvalidArgument,
                      "position {} is outside the rotary table [0, {}) (--ctx)", p,
                      table.positions);
  }
  static Status cache_range_error(int32_t p, const KvCacheView& cache) {
    return make_error(ErrorCode::kInvalidArgument,
                      "position {} does not fit the KV cache of {} positions (--ctx)", p,
                      cache.capacity);
  }

  // store_kv's checks of k, v, the cache and the positions; the positions as the kernels read
  // them.
  Result<const int32_t*> store_kv_checks(std::string_view op, ConstMatrixView k, ConstMatrixView v,
                                         ConstMatrixView positions, const KvCacheView& cache,
                                         int64_t layer) {
    QL_RETURN_IF_ERROR(store_kv_view_checks(op, k, v, positions, cache, layer));
    return indices(op, positions, cache.capacity,
                   [&](int32_t p, int64_t) { return cache_range_error(p, cache); });
  }
  // store_kv_checks without the positions' values.
  Status store_kv_view_checks(std::string_view op, ConstMatrixView k, ConstMatrixView v,
                              ConstMatrixView positions, const KvCacheView& cache, int64_t layer) {
    const int64_t width = cache.kv_heads * cache.head_dim;
    QL_RETURN_IF_ERROR(require_shape(op, "k", k, positions.cols(), width));
    QL_RETURN_IF_ERROR(require_shape(op, "v", v, positions.cols(), width));
    QL_RETURN_IF_ERROR(require_device(op, k, "k"));
    QL_RETURN_IF_ERROR(require_device(op, v, "v"));
    QL_RETURN_IF_ERROR(require_float(op, "k", k));
    QL_RETURN_IF_ERROR(require_float(op, "v", v));
    QL_RETURN_IF_ERROR(require_cache(op, cache, layer, k.rows()));
    return Status::ok_status();
  }

  // Host indices are checked with `out_of_range(value, t)` and copied to the device; device ones
  // pass as they are (the kernels guard them).
  template <class OutOfRange>
  Result<const int32_t*> indices(std::string_view op, ConstMatrixView v, int64_t limit,
                                 OutOfRange&& out_of_range) {
    if (v.dtype() != DType::kI32 || v.rows() != 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda ops {}: indices are {} [{}, {}]; need i32 [1, T]", op,
                        dtype_name(v.dtype()), v.rows(), v.cols());
    }
    if (!v.location().host_accessible()) {
      QL_RETURN_IF_ERROR(require_device(op, v, "the indices"));
      return pointer_of<const int32_t>(v);
    }
    const int32_t* values = v.row_as<int32_t>(0);
    for (int64_t t = 0; t < v.cols(); ++t) {
      if (values[t] < 0 || values[t] >= limit) return out_of_range(values[t], t);
    }
    const int64_t count = std::max<int64_t>(v.cols(), 1024);
    if (index_buffer_.data() == nullptr || index_buffer_.numel() < count) {
      QL_ASSIGN_OR_RETURN(index_buffer_,
                          Tensor::allocate(DType::kI32, {count}, device_.allocator()));
    }
    // Ordered on the stream after the kernels that read the buffer before, and waited for (the
    // host values may be gone when this returns).
    if (v.cols() > 0) {
      QL_RETURN_IF_ERROR(device_.upload(index_buffer_.data(), 0, values,
                                        static_cast<std::size_t>(v.cols()) * sizeof(int32_t)));
    }
    return index_buffer_.data_as<int32_t>();
  }

  // The grouped kernel (a block per kv head and its query group, decoder_attention_group.cu)
  // where the cache's rows allow it and the per-head kernel would fill eight blocks per SM
  // without a split (prefill, large batches). H200, 8B W4A16 (bench/results/
  // h200-attention-group-2026-12-04): prefill of 3968 tokens 7208 against 4309 tok/s, of 1024
  // 17966 against 12281; decode at batch 64 10132 against 9182 tok/s in total; but batch-1
  // decode 356 against 389 tok/s at 128 positions and batch 16 4634 against 4926 (with 5
  // parts): where the keys must be split the per-head kernel stays. Requesting its first tile
  // before the wait (settled history) did not change that: 354 against 388 tok/s at batch 1
  // (bench/results/h200-attention-runs-2026-12-04).
  // QLINEAR_CUDA_ATTENTION_GROUPED=0 never takes it, =1 wherever it fits (tests and A/B runs;
  // read per call, so a test can run both kernels in one process).
  bool grouped_attention(const launch::DecoderAttention& a) const {
    const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_GROUPED");
    const std::string_view mode = v != nullptr ? v : "";
    if (mode == "0" || !launch::decoder_attention_grouped_fits(a)) return false;
    const int64_t sms = std::max(1, device_.device().sm_count);
    return mode == "1" || a.rows * a.heads >= 8 * sms;
  }
  // Tensor cores (decoder_attention_mma.cu) for prompt chunks of at least one tile of 64 rows
  // over a bf16 cache: each block reads a key tile once for 64 query rows where the grouped
  // kernel reads it once per row. Decode forwards (settled history) keep the kernels above.
  // QLINEAR_CUDA_ATTENTION_MMA=0 never takes it, =1 wherever it fits, =require wherever it fits
  // and an error elsewhere (tests and A/B runs; read per call).
  static Result<bool> mma_attention(const launch::DecoderAttention& a) {
    const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_MMA");
    const std::string_view mode = v != nullptr ? v : "";
    if (mode == "0") return false;
    if (!launch::decoder_attention_mma_fits(a)) {
      if (mode != "require") return false;
      return make_error(ErrorCode::kUnsupported,
                        "QLINEAR_CUDA_ATTENTION_MMA=require: the tensor-core attention takes bf16 "
                        "caches with 16-byte rows, head_dim 32, 64 or 128 and unsplit keys "
                        "(cache {} / {}, head_dim {}, {} splits)",
                        a.cache.k.code, a.cache.v.code, a.head_dim, a.splits);
    }
    return mode == "1" || mode == "require" || (!a.settled && a.rows >= 64);
  }
  // QLINEAR_CUDA_ATTENTION_PREFETCH=0 keeps a decode's attention from reading its settled keys
  // before the wait; QLINEAR_CUDA_ATTENTION_SHORT_PART=k sets DecoderAttention::short_part_keys
  // (read per call, for measurements).
  static bool prefetch_history() {
    const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_PREFETCH");
    return v == nullptr || std::string_view(v) != "0";
  }
  static int short_part_keys() {
    const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_SHORT_PART");
    return v != nullptr ? std::max(std::atoi(v), 0) : launch::kDecoderShortPartKeys;
  }

  // Decode attention has rows * heads blocks (rows * kv_heads grouped), too few for the GPU: when
  // they are fewer than two per SM, the keys of each are split over up to enough blocks for eight
  // per SM (four grouped, whose blocks serve several heads; decoder_attention*.cu use as many as
  // the context fills with parts of at least min_split_keys keys).
  // The count depends on the shape only, never on the positions, so a recorded decode step stays
  // right at every context length. The partials and counters are allocated once, the partials for
  // 16 parts per SM or the first shape that splits if it needs more, and never moved, so no
  // recorded graph can point at freed memory; a later shape gets the splits they hold.
  // QLINEAR_CUDA_ATTENTION_SPLITS=n forces n splits where it splits (1: never),
  // QLINEAR_CUDA_ATTENTION_MIN_PART=k the fewest keys of a part (measurement knobs).
  Status split_keys(launch::DecoderAttention& a) {
    static const int forced = [] {
      const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_SPLITS");
      return v != nullptr ? std::min(std::atoi(v), launch::kDecoderMaxSplits) : 0;
    }();
    static const int min_part = [] {
      const char* v = std::getenv("QLINEAR_CUDA_ATTENTION_MIN_PART");
      return v != nullptr ? std::max(std::atoi(v), 0) : 0;
    }();
    const int64_t pairs = a.rows * (a.grouped ? a.kv_heads : a.heads);
    const int64_t sms = std::max(1, device_.device().sm_count);
    const int64_t target = (a.grouped ? 4 : 8) * sms;
    if (pairs >= 2 * sms || forced == 1) return Status::ok_status();
    int splits = forced > 1 ? forced
                            : static_cast<int>(std::min<int64_t>((target + pairs - 1) / pairs,
                                                                 launch::kDecoderMaxSplits));
    if (splits <= 1) return Status::ok_status();
    // Partials are kept per query head either way.
    const int64_t parts = a.rows * a.heads * splits;
    const int64_t stride = a.head_dim + 2;
    if (partials_.data() == nullptr) {
      // Never allocated inside a graph recording (the eager first decode step comes before it).
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      QL_CUDA(cudaStreamIsCapturing(stream_, &capture));
      if (capture != cudaStreamCaptureStatusNone) return Status::ok_status();
      const int64_t most =
          std::max<int64_t>(16 * sms * (launch::kDecoderMaxHeadDim + 2), parts * stride);
      QL_ASSIGN_OR_RETURN(partials_, Tensor::allocate(DType::kF32, {most}, device_.allocator()));
      QL_ASSIGN_OR_RETURN(counters_, Tensor::allocate(DType::kI32, {2 * sms}, device_.allocator()));
      QL_CUDA(cudaMemsetAsync(counters_.data(), 0, static_cast<std::size_t>(2 * sms) * 4, stream_));
    }
    splits = static_cast<int>(
        std::min<int64_t>(splits, partials_.numel() / (a.rows * a.heads * stride)));
    if (splits <= 1) return Status::ok_status();
    a.splits = splits;
    a.min_split_keys = min_part > 0 ? min_part
                       : a.grouped  ? launch::kDecoderGroupedMinSplitKeys
                                    : launch::kDecoderMinSplitKeys;
    a.partials = partials_.data_as<float>();
    a.counters = counters_.data_as<int>();
    return Status::ok_status();
  }

  Status require_device(std::string_view op, ConstMatrixView v, std::string_view what) const {
    return ops_checks::require_location("cuda", op, v, what, device_.location());
  }
  static Status require_shape(std::string_view op, std::string_view what, ConstMatrixView v,
                              int64_t rows, int64_t cols) {
    return ops_checks::require_shape("cuda", op, what, v, rows, cols);
  }
  static Status require_f32(std::string_view op, std::string_view what, ConstMatrixView v) {
    return ops_checks::require_f32("cuda", op, what, v);
  }
  static Status require_float(std::string_view op, std::string_view what, ConstMatrixView v) {
    return ops_checks::require_float("cuda", op, what, v);
  }
  Status require_cache(std::string_view op, const KvCacheView& cache, int64_t layer,
                       int64_t rows) const {
    QL_RETURN_IF_ERROR(ops_checks::require_cache("cuda", op, cache, layer, rows, device_.location(),
                                                 /*fp8=*/true));
    if (cache.fp8() && (cache.k_scale.ld() != cache.v_scale.ld() || cache.head_dim <= 0 ||
                        cache.head_dim % 2 != 0 || cache.head_dim > launch::kDecoderMaxHeadDim)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda ops {}: an FP8 cache needs key and value scales of one leading "
                        "dimension ({} and {}) and an even head_dim of at most {} ({})",
                        op, cache.k_scale.ld(), cache.v_scale.ld(), launch::kDecoderMaxHeadDim,
                        cache.head_dim);
    }
    return Status::ok_status();
  }

  DeviceContext& device_;
  cudaStream_t stream_;
  Tensor index_buffer_;
  Tensor partials_, counters_;  // split attention (split_keys)
};

}  // namespace

Result<std::unique_ptr<DecoderOps>> make_cuda_ops(DeviceContext& context) {
  if (context.device().platform != Platform::kCuda) {
    return make_error(ErrorCode::kInvalidArgument, "make_cuda_ops: {} is not a CUDA device",
                      context.device().describe());
  }
  // Launches go to the current device; the runner uses one device per process.
  QL_CUDA(cudaSetDevice(context.device().index));
  return std::unique_ptr<DecoderOps>(std::make_unique<CudaOps>(context));
}

}  // namespace qlinear
