// The argument checks every backend's DecoderOps makes (cpu_ops.cc, cuda_ops.cc,
// opencl_ops.cc), with one wording: "<backend> ops <op>: <what> is ...".
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "model/ops.h"
#include "qlinear/dtype.h"
#include "qlinear/view.h"

namespace qlinear::ops_checks {

inline bool float_dtype(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16;
}

inline Status require_shape(std::string_view backend, std::string_view op, std::string_view what,
                            ConstMatrixView v, int64_t rows, int64_t cols) {
  if (v.rows() != rows || v.cols() != cols) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops {}: {} is [{}, {}]; expected [{}, {}]",
                      backend, op, what, v.rows(), v.cols(), rows, cols);
  }
  return Status::ok_status();
}

inline Status require_f32(std::string_view backend, std::string_view op, std::string_view what,
                          ConstMatrixView v) {
  if (v.dtype() != DType::kF32) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops {}: {} is {}; needs f32", backend, op,
                      what, dtype_name(v.dtype()));
  }
  return Status::ok_status();
}

inline Status require_float(std::string_view backend, std::string_view op, std::string_view what,
                            ConstMatrixView v) {
  if (!float_dtype(v.dtype())) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops {}: {} is {}; needs f32, bf16 or f16",
                      backend, op, what, dtype_name(v.dtype()));
  }
  return Status::ok_status();
}

// `v` is an I32 row of `cols` indices (token ids, positions, argmax's ids).
inline Status require_i32_row(std::string_view backend, std::string_view op, std::string_view what,
                              ConstMatrixView v, int64_t cols) {
  if (v.dtype() != DType::kI32 || v.rows() != 1 || v.cols() != cols) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} ops {}: {} is {} [{}, {}]; expected i32 [1, {}]", backend, op, what,
                      dtype_name(v.dtype()), v.rows(), v.cols(), cols);
  }
  return Status::ok_status();
}

// argmax's operands (model/ops.h): f32 logits [T, V], ids i32 [1, T], every column index an i32.
inline Status require_argmax(std::string_view backend, ConstMatrixView logits,
                             ConstMatrixView ids) {
  QL_RETURN_IF_ERROR(require_f32(backend, "argmax", "logits", logits));
  QL_RETURN_IF_ERROR(require_i32_row(backend, "argmax", "ids", ids, logits.rows()));
  if (logits.cols() > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops argmax: {} columns do not fit i32",
                      backend, logits.cols());
  }
  return Status::ok_status();
}

// sample's logits, seen flags (U8 [1, V]; empty allowed without a penalty) and ids.
inline Status require_sample(std::string_view backend, ConstMatrixView logits, ConstMatrixView seen,
                             const SamplingOptions& options, ConstMatrixView ids) {
  QL_RETURN_IF_ERROR(require_f32(backend, "sample", "logits", logits));
  QL_RETURN_IF_ERROR(require_i32_row(backend, "sample", "ids", ids, logits.rows()));
  QL_RETURN_IF_ERROR(check_sampling(options));
  if (logits.cols() > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops sample: {} columns do not fit i32",
                      backend, logits.cols());
  }
  const bool penalty = options.repetition_penalty != 1.0;
  if ((penalty || seen.data() != nullptr) &&
      (seen.dtype() != DType::kU8 || seen.rows() != 1 || seen.cols() != logits.cols())) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} ops sample: seen must be u8 [1, {}] (got {} [{}, {}])", backend,
                      logits.cols(), dtype_name(seen.dtype()), seen.rows(), seen.cols());
  }
  return Status::ok_status();
}

// `v` lives in the device's memory (`expected`), not in another device's or the host's.
inline Status require_location(std::string_view backend, std::string_view op, ConstMatrixView v,
                               std::string_view what, const Location& expected) {
  if (v.location() != expected) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops {}: {} lives in {} memory, not {}",
                      backend, op, what, v.location().to_string(), expected.to_string());
  }
  return Status::ok_status();
}

// The call's `rows` fit the cache's sequences (KvCacheView: row t belongs to sequence
// first_sequence + t / rows_per_sequence) and the cache holds layers x sequences x capacity rows.
inline Status require_sequences(std::string_view backend, std::string_view op,
                                const KvCacheView& cache, int64_t rows) {
  const bool fits = cache.sequences >= 1 && cache.first_sequence >= 0 &&
                    cache.first_sequence < cache.sequences && cache.rows_per_sequence >= 0 &&
                    (rows == 0 || cache.sequence_of(rows - 1) < cache.sequences) &&
                    cache.k.rows() >= cache.layers * cache.sequences * cache.capacity &&
                    cache.v.rows() >= cache.layers * cache.sequences * cache.capacity;
  if (!fits) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} ops {}: {} rows from sequence {} ({} rows per sequence, 0: all) do not "
                      "fit a cache of {} sequences x {} positions x {} layers ({} rows)",
                      backend, op, rows, cache.first_sequence, cache.rows_per_sequence,
                      cache.sequences, cache.capacity, cache.layers, cache.k.rows());
  }
  return Status::ok_status();
}

// An FP8 cache (model/kv_fp8.h): e4m3 keys and values, each with f32 scales [rows, kv_heads]
// in the device's memory.
inline Status require_fp8_cache(std::string_view backend, std::string_view op,
                                const KvCacheView& cache, const Location& expected) {
  if (cache.k.dtype() != DType::kF8E4M3 || cache.v.dtype() != DType::kF8E4M3) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} ops {}: the key cache is {} and the value cache {}; an FP8 cache has "
                      "both f8_e4m3fn",
                      backend, op, dtype_name(cache.k.dtype()), dtype_name(cache.v.dtype()));
  }
  for (const auto& [scale, what] : {std::pair{cache.k_scale, "the key cache's scales"},
                                    std::pair{cache.v_scale, "the value cache's scales"}}) {
    if (scale.data() == nullptr || scale.dtype() != DType::kF32 || scale.rows() < cache.k.rows() ||
        scale.cols() != cache.kv_heads) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{} ops {}: {} are {} [{}, {}]; an FP8 cache of {} rows and {} kv heads "
                        "needs f32 [{}, {}]",
                        backend, op, what, dtype_name(scale.dtype()), scale.rows(), scale.cols(),
                        cache.k.rows(), cache.kv_heads, cache.k.rows(), cache.kv_heads);
    }
    QL_RETURN_IF_ERROR(require_location(backend, op, scale, what, expected));
  }
  return Status::ok_status();
}

// `layer` is one of the cache's, the call's `rows` fit its sequences, and both halves are float
// tensors in the device's memory, or an FP8 pair with its scales where the backend has the FP8
// cache (`fp8`; otherwise an FP8 cache is an error saying so).
inline Status require_cache(std::string_view backend, std::string_view op, const KvCacheView& cache,
                            int64_t layer, int64_t rows, const Location& expected,
                            bool fp8 = false) {
  if (layer < 0 || layer >= cache.layers) {
    return make_error(ErrorCode::kInvalidArgument, "{} ops {}: layer {} of a cache of {}", backend,
                      op, layer, cache.layers);
  }
  QL_RETURN_IF_ERROR(require_sequences(backend, op, cache, rows));
  QL_RETURN_IF_ERROR(require_location(backend, op, cache.k, "the key cache", expected));
  QL_RETURN_IF_ERROR(require_location(backend, op, cache.v, "the value cache", expected));
  if (cache.fp8()) {
    if (!fp8) {
      return make_error(ErrorCode::kUnsupported,
                        "{} ops {}: the {} backend has no FP8 KV cache (--kv-dtype fp8); use f32 "
                        "or bf16",
                        backend, op, backend);
    }
    return require_fp8_cache(backend, op, cache, expected);
  }
  QL_RETURN_IF_ERROR(require_float(backend, op, "the key cache", cache.k));
  return require_float(backend, op, "the value cache", cache.v);
}

}  // namespace qlinear::ops_checks
