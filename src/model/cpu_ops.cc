// The decoder's operations on the host (ops.h): plain loops the compiler vectorises, OpenMP over
// rows (and over query heads in attention). Reductions accumulate in double (norms) or f32
// (attention, as transformers' f32 softmax does).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "model/cpu_attention.h"
#include "model/kv_fp8.h"
#include "model/ops.h"
#include "model/ops_checks.h"
#include "model/sampler.h"
#include "model/vector_exp.h"
#include "model/vector_form.h"
#include "model/vector_lanes.h"

namespace qlinear {
namespace {

constexpr int64_t kMaxHeadDim = cpu_attention::kMaxHeadDim;

float load(const void* row, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(row)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
    default:
      return 0.0f;
  }
}

void store(void* row, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(row)[i] = value;
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(row)[i] = f32_to_bf16(value);
      break;
    case DType::kF16:
      static_cast<uint16_t*>(row)[i] = f32_to_f16(value);
      break;
    default:
      break;
  }
}

#if defined(__x86_64__)
using vector_lanes::lanes_below;
using vector_lanes::tail_mask;

#define QL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// y into elements i .. i + 15 (those of m) of an f32 or bf16 row, bf16 rounded like
// core/dtype.cc f32_to_bf16 (ties to even, a NaN kept a quiet NaN).
QL_AVX512 inline void store16(void* dst, int64_t i, __mmask16 m, __m512 y, bool bf16) {
  if (!bf16) {
    _mm512_mask_storeu_ps(static_cast<float*>(dst) + i, m, y);
    return;
  }
  const __m512i bits = _mm512_castps_si512(y);
  const __m512i high = _mm512_srli_epi32(bits, 16);
  const __m512i rounding =
      _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(high, _mm512_set1_epi32(1)));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(bits, rounding), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q),
                            _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
  _mm256_mask_storeu_epi16(static_cast<uint16_t*>(dst) + i, m, _mm512_cvtepi32_epi16(r));
}

// dst[i] = w[i] * (x[i] * inv) for i < n (the scalar loop's two roundings), f32 or bf16.
QL_AVX512 void norm_row_avx512(const float* x, const float* w, float inv, int64_t n, void* dst,
                               bool bf16) {
  const __m512 s = _mm512_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 y = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i),
                                   _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s));
    store16(dst, i, m, y, bf16);
  }
}

// dst[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n, 16 at a time (SLEEF's exp), f32 or bf16.
QL_AVX512 void silu_mul_avx512(const float* g, const float* u, int64_t n, void* dst, bool bf16) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
    const __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), gv));
    const __m512 y = _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), uv);
    store16(dst, i, m, y, bf16);
  }
}
#undef QL_AVX512

#define QL_AVX2 __attribute__((target("avx2,fma,f16c")))

// y into elements i .. i + 7 (those below `left`) of an f32 or bf16 row, bf16 rounded as store16.
QL_AVX2 inline void store8(void* dst, int64_t i, int64_t left, __m256 y, bool bf16) {
  if (!bf16) {
    if (left >= 8) {
      _mm256_storeu_ps(static_cast<float*>(dst) + i, y);
    } else {
      _mm256_maskstore_ps(static_cast<float*>(dst) + i, lanes_below(left), y);
    }
    return;
  }
  const __m256i bits = _mm256_castps_si256(y);
  const __m256i high = _mm256_srli_epi32(bits, 16);
  const __m256i rounding =
      _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(high, _mm256_set1_epi32(1)));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, rounding), 16);
  const __m256 nan = _mm256_cmp_ps(y, y, _CMP_UNORD_Q);
  r = _mm256_blendv_epi8(r, _mm256_or_si256(high, _mm256_set1_epi32(0x40)),
                         _mm256_castps_si256(nan));
  // 8 u32 below 2^16 -> 8 u16 in order (packus works per 128-bit lane).
  const __m128i packed =
      _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
  uint16_t* out = static_cast<uint16_t*>(dst) + i;
  if (left >= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), packed);
  } else {
    alignas(16) uint16_t lanes[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), packed);
    std::memcpy(out, lanes, static_cast<std::size_t>(left) * sizeof(uint16_t));
  }
}

QL_AVX2 void norm_row_avx2(const float* x, const float* w, float inv, int64_t n, void* dst,
                           bool bf16) {
  const __m256 s = _mm256_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = lanes_below(n - i);
    const __m256 y =
        _mm256_mul_ps(_mm256_maskload_ps(w + i, m), _mm256_mul_ps(_mm256_maskload_ps(x + i, m), s));
    store8(dst, i, n - i, y, bf16);
  }
}

QL_AVX2 void silu_mul_avx2(const float* g, const float* u, int64_t n, void* dst, bool bf16) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = lanes_below(n - i);
    const __m256 gv = _mm256_maskload_ps(g + i, m);
    const __m256 uv = _mm256_maskload_ps(u + i, m);
    const __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    const __m256 y = _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), uv);
    store8(dst, i, n - i, y, bf16);
  }
}
#undef QL_AVX2
#endif

// The row steps of one vector form (f32 or bf16 rows); null for the portable loops.
struct RowSteps {
  void (*norm)(const float*, const float*, float, int64_t, void*, bool);
  void (*silu_mul)(const float*, const float*, int64_t, void*, bool);
};

const RowSteps* row_steps(VectorForm form) {
#if defined(__x86_64__)
  static constexpr RowSteps kAvx512{norm_row_avx512, silu_mul_avx512};
  static constexpr RowSteps kAvx2{norm_row_avx2, silu_mul_avx2};
  if (form == VectorForm::kAvx512) return &kAvx512;
  if (form == VectorForm::kAvx2) return &kAvx2;
#endif
  (void)form;
  return nullptr;
}

using ops_checks::float_dtype;

Status require_host(std::string_view op, ConstMatrixView v, std::string_view what) {
  if (!v.location().host_accessible()) {
    return make_error(ErrorCode::kInvalidArgument, "cpu ops {}: {} lives in {} memory", op, what,
                      v.location().to_string());
  }
  return Status::ok_status();
}

Status require_shape(std::string_view op, std::string_view what, ConstMatrixView v, int64_t rows,
                     int64_t cols) {
  QL_RETURN_IF_ERROR(ops_checks::require_shape("cpu", op, what, v, rows, cols));
  return require_host(op, v, what);
}

Status require_f32(std::string_view op, std::string_view what, ConstMatrixView v) {
  return ops_checks::require_f32("cpu", op, what, v);
}

// The inverse RMS of a row, accumulated in double: eight interleaved sums added pairwise (one
// serial chain of n additions cost ~3 us per 2048-wide row; the f64 sum rounds to the same f32
// inverse almost always whatever its order).
float inverse_rms(const float* x, int64_t n, float eps) {
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) part[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  double sum =
      ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
}

class CpuOps final : public DecoderOps {
 public:
  CpuOps(int threads, VectorForm form)
      : threads_(threads > 0 ? threads : omp_get_max_threads()),
        form_(form),
        rows_(row_steps(form)) {}

  Status embed(ConstMatrixView table, ConstMatrixView ids, MatrixView out) override {
    const int64_t T = ids.cols();
    QL_RETURN_IF_ERROR(require_shape("embed", "out", out, T, table.cols()));
    QL_RETURN_IF_ERROR(require_f32("embed", "out", out));
    QL_RETURN_IF_ERROR(require_host("embed", table, "the table"));
    const int32_t* id = ids.row_as<int32_t>(0);
    for (int64_t t = 0; t < T; ++t) {
      if (id[t] < 0 || id[t] >= table.rows()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "token id {} at position {} is outside the vocabulary [0, {})", id[t], t,
                          table.rows());
      }
    }
#pragma omp parallel for num_threads(team(T* table.cols())) schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      convert_to_f32(table.row(id[t]), table.dtype(), static_cast<std::size_t>(table.cols()),
                     out.row_as<float>(t));
    }
    return Status::ok_status();
  }

  Status rms_norm(ConstMatrixView x, ConstMatrixView weight, float eps, MatrixView out) override {
    QL_RETURN_IF_ERROR(require_f32("rms_norm", "x", x));
    QL_RETURN_IF_ERROR(require_shape("rms_norm", "out", out, x.rows(), x.cols()));
    QL_RETURN_IF_ERROR(require_shape("rms_norm", "weight", weight, 1, x.cols()));
    const int64_t n = x.cols();
    const float* w = weight.row_as<float>(0);
#pragma omp parallel for num_threads(team(x.rows() * n)) schedule(static)
    for (int64_t t = 0; t < x.rows(); ++t) {
      const float* row = x.row_as<float>(t);
      const float inv = inverse_rms(row, n, eps);
      void* dst = out.row(t);
      if (rows_ != nullptr && (out.dtype() == DType::kF32 || out.dtype() == DType::kBF16)) {
        rows_->norm(row, w, inv, n, dst, out.dtype() == DType::kBF16);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) store(dst, out.dtype(), i, w[i] * (row[i] * inv));
    }
    return Status::ok_status();
  }

  Status add_rms_norm(MatrixView residual, ConstMatrixView delta, ConstMatrixView weight, float eps,
                      MatrixView out) override {
    QL_RETURN_IF_ERROR(add(residual, delta));
    return rms_norm(residual, weight, eps, out);
  }

  Status head_rms_norm(MatrixView x, int64_t head_dim, ConstMatrixView weight, float eps) override {
    QL_RETURN_IF_ERROR(require_f32("head_rms_norm", "x", x));
    QL_RETURN_IF_ERROR(require_shape("head_rms_norm", "weight", weight, 1, head_dim));
    if (head_dim <= 0 || x.cols() % head_dim != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cpu ops head_rms_norm: {} columns are not whole heads of {}", x.cols(),
                        head_dim);
    }
    const float* w = weight.row_as<float>(0);
    const int64_t heads = x.cols() / head_dim;
#pragma omp parallel for num_threads(team(x.rows() * x.cols())) schedule(static)
    for (int64_t t = 0; t < x.rows(); ++t) {
      float* row = x.row_as<float>(t);
      for (int64_t h = 0; h < heads; ++h) {
        float* v = row + h * head_dim;
        const float inv = inverse_rms(v, head_dim, eps);
        for (int64_t i = 0; i < head_dim; ++i) v[i] = w[i] * (v[i] * inv);
      }
    }
    return Status::ok_status();
  }

  Status rope(MatrixView x, int64_t head_dim, ConstMatrixView positions,
              const RopeTable& table) override {
    QL_RETURN_IF_ERROR(require_f32("rope", "x", x));
    const int64_t half = head_dim / 2;
    if (half != table.half || x.cols() % head_dim != 0 || positions.cols() != x.rows()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cpu ops rope: x [{}, {}] with head_dim {} and {} positions does not fit "
                        "a table of {} frequencies",
                        x.rows(), x.cols(), head_dim, positions.cols(), table.half);
    }
    const int32_t* pos = positions.row_as<int32_t>(0);
    for (int64_t t = 0; t < x.rows(); ++t) {
      if (pos[t] < 0 || pos[t] >= table.positions) {
        return make_error(ErrorCode::kInvalidArgument,
                          "position {} is outside the rotary table [0, {}) (--ctx)", pos[t],
                          table.positions);
      }
    }
    const int64_t heads = x.cols() / head_dim;
#pragma omp parallel for num_threads(team(x.rows() * x.cols())) schedule(static)
    for (int64_t t = 0; t < x.rows(); ++t) {
      const float* c = table.cos.row_as<float>(pos[t]);
      const float* s = table.sin.row_as<float>(pos[t]);
      float* row = x.row_as<float>(t);
      for (int64_t h = 0; h < heads; ++h) {
        float* v = row + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i];
          const float b = v[i + half];
          v[i] = a * c[i] - b * s[i];
          v[i + half] = b * c[i] + a * s[i];
        }
      }
    }
    return Status::ok_status();
  }

  Status store_kv(ConstMatrixView k, ConstMatrixView v, ConstMatrixView positions,
                  const KvCacheView& cache, int64_t layer) override {
    const int64_t width = cache.kv_heads * cache.head_dim;
    QL_RETURN_IF_ERROR(require_shape("store_kv", "k", k, positions.cols(), width));
    QL_RETURN_IF_ERROR(require_shape("store_kv", "v", v, positions.cols(), width));
    QL_RETURN_IF_ERROR(ops_checks::require_sequences("cpu", "store_kv", cache, k.rows()));
    const int32_t* pos = positions.row_as<int32_t>(0);
    if (cache.fp8()) {
      QL_RETURN_IF_ERROR(
          ops_checks::require_fp8_cache("cpu", "store_kv", cache, cache.k.location()));
      if (cache.head_dim <= 0 || cache.head_dim > kMaxHeadDim) {
        return make_error(ErrorCode::kInvalidArgument,
                          "cpu ops store_kv: head_dim {} of an FP8 cache (at most {})",
                          cache.head_dim, kMaxHeadDim);
      }
    }
    const MatrixView ck = cache.layer_k(layer);
    const MatrixView cv = cache.layer_v(layer);
    const MatrixView ks = cache.layer_k_scale(layer);
    const MatrixView vs = cache.layer_v_scale(layer);
    float head[kMaxHeadDim];
    for (int64_t t = 0; t < k.rows(); ++t) {
      if (pos[t] < 0 || pos[t] >= cache.capacity) {
        return make_error(ErrorCode::kInvalidArgument,
                          "position {} does not fit the KV cache of {} positions (--ctx)", pos[t],
                          cache.capacity);
      }
      const int64_t row = cache.cache_row(t, pos[t]);
      for (const auto& [src, dst, scales] : {std::tuple{k, ck, ks}, std::tuple{v, cv, vs}}) {
        void* out = dst.row(row);
        const void* in = src.row(t);
        if (cache.fp8()) {
          // Per kv head: its codes and scale (model/kv_fp8.h).
          const int64_t d = cache.head_dim;
          for (int64_t h = 0; h < cache.kv_heads; ++h) {
            for (int64_t i = 0; i < d; ++i) head[i] = load(in, src.dtype(), h * d + i);
            scales.row_as<float>(row)[h] =
                kv_fp8::quantize_head(head, d, static_cast<uint8_t*>(out) + h * d);
          }
        } else if (src.dtype() == dst.dtype()) {
          std::memcpy(out, in, static_cast<std::size_t>(width) * src.element_bytes());
        } else {
          for (int64_t i = 0; i < width; ++i) store(out, dst.dtype(), i, load(in, src.dtype(), i));
        }
      }
    }
    return Status::ok_status();
  }

  Status attention(ConstMatrixView q, ConstMatrixView positions, const KvCacheView& cache,
                   int64_t layer, const AttentionShape& shape, MatrixView out) override {
    const int64_t d = shape.head_dim;
    const int64_t T = q.rows();
    QL_RETURN_IF_ERROR(require_f32("attention", "q", q));
    QL_RETURN_IF_ERROR(require_shape("attention", "q", q, T, shape.heads * d));
    QL_RETURN_IF_ERROR(require_shape("attention", "out", out, T, shape.heads * d));
    if (d > kMaxHeadDim || shape.kv_heads <= 0 || shape.heads % shape.kv_heads != 0 ||
        positions.cols() != T) {
      return make_error(ErrorCode::kInvalidArgument,
                        "cpu ops attention: heads {} / kv heads {} / head_dim {} / {} positions "
                        "for {} rows",
                        shape.heads, shape.kv_heads, d, positions.cols(), T);
    }
    QL_RETURN_IF_ERROR(ops_checks::require_sequences("cpu", "attention", cache, T));
    if (cache.fp8()) {
      QL_RETURN_IF_ERROR(
          ops_checks::require_fp8_cache("cpu", "attention", cache, cache.k.location()));
    }
    const int32_t* pos = positions.row_as<int32_t>(0);
    for (int64_t t = 0; t < T; ++t) {
      if (pos[t] < 0 || pos[t] >= cache.capacity) {
        return make_error(ErrorCode::kInvalidArgument,
                          "position {} does not fit the KV cache of {} positions", pos[t],
                          cache.capacity);
      }
    }
    const MatrixView ck = cache.layer_k(layer);
    const MatrixView cv = cache.layer_v(layer);
    const MatrixView ks = cache.layer_k_scale(layer);
    const MatrixView vs = cache.layer_v_scale(layer);
    const int64_t group = shape.heads / shape.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    // One job per (row, KV head): its query heads share each widened key and value row.
    const int64_t jobs = T * shape.kv_heads;
    const int64_t k_bytes = static_cast<int64_t>(ck.element_bytes());
    const int64_t v_bytes = static_cast<int64_t>(cv.element_bytes());
#pragma omp parallel for num_threads(team(jobs* group * 4096)) schedule(dynamic, 1)
    for (int64_t job = 0; job < jobs; ++job) {
      const int64_t t = job / shape.kv_heads;
      const int64_t kvh = job % shape.kv_heads;
      const int64_t last = pos[t];
      const int64_t first = shape.window > 0 ? std::max<int64_t>(0, last - shape.window + 1) : 0;
      const int64_t base = cache.cache_row(t, 0);  // row t's sequence's position 0
      cpu_attention::KvHead kv;
      kv.k = static_cast<const std::byte*>(ck.row(base)) + kvh * d * k_bytes;
      kv.v = static_cast<const std::byte*>(cv.row(base)) + kvh * d * v_bytes;
      kv.k_stride = ck.ld() * k_bytes;
      kv.v_stride = cv.ld() * v_bytes;
      kv.dtype = ck.dtype();
      if (cache.fp8()) {
        kv.k_scale = ks.row_as<float>(base) + kvh;
        kv.v_scale = vs.row_as<float>(base) + kvh;
        kv.scale_stride = ks.ld();
      }
      float heads_out[kMaxHeadDim * 8];
      std::vector<float> wide;  // more than 8 query heads per KV head (rare: MQA)
      float* o = heads_out;
      if (group > 8) {
        wide.resize(static_cast<std::size_t>(group * d));
        o = wide.data();
      }
      cpu_attention::attend(q.row_as<float>(t) + kvh * group * d, group, d, kv, first, last, scale,
                            o, form_);
      void* dst = static_cast<std::byte*>(out.row(t)) +
                  kvh * group * d * static_cast<int64_t>(out.element_bytes());
      for (int64_t i = 0; i < group * d; ++i) store(dst, out.dtype(), i, o[i]);
    }
    return Status::ok_status();
  }

  Status silu_mul(ConstMatrixView gate, ConstMatrixView up, MatrixView out) override {
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "gate", gate));
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "up", up));
    const int64_t I = out.cols();
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "gate", gate, out.rows(), I));
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "up", up, out.rows(), I));
    QL_RETURN_IF_ERROR(require_host("silu_mul", out, "out"));
#pragma omp parallel for num_threads(team(out.rows() * I)) schedule(static)
    for (int64_t t = 0; t < out.rows(); ++t) {
      const float* g = gate.row_as<float>(t);
      const float* u = up.row_as<float>(t);
      void* dst = out.row(t);
      if (rows_ != nullptr && (out.dtype() == DType::kF32 || out.dtype() == DType::kBF16)) {
        rows_->silu_mul(g, u, I, dst, out.dtype() == DType::kBF16);
        continue;
      }
      for (int64_t i = 0; i < I; ++i) {
        store(dst, out.dtype(), i, g[i] / (1.0f + std::exp(-g[i])) * u[i]);
      }
    }
    return Status::ok_status();
  }

  Status add(MatrixView dst, ConstMatrixView src) override {
    QL_RETURN_IF_ERROR(require_f32("add", "dst", dst));
    QL_RETURN_IF_ERROR(require_shape("add", "src", src, dst.rows(), dst.cols()));
    if (!float_dtype(src.dtype())) {
      return make_error(ErrorCode::kInvalidArgument, "cpu ops add: src is {}",
                        dtype_name(src.dtype()));
    }
#pragma omp parallel for num_threads(team(dst.rows() * dst.cols())) schedule(static)
    for (int64_t t = 0; t < dst.rows(); ++t) {
      float* d = dst.row_as<float>(t);
      const void* s = src.row(t);
      for (int64_t i = 0; i < dst.cols(); ++i) d[i] += load(s, src.dtype(), i);
    }
    return Status::ok_status();
  }

  Status copy(ConstMatrixView src, MatrixView dst) override {
    QL_RETURN_IF_ERROR(require_shape("copy", "src", src, dst.rows(), dst.cols()));
    QL_RETURN_IF_ERROR(require_host("copy", dst, "dst"));
    if (!float_dtype(src.dtype()) || !float_dtype(dst.dtype())) {
      return make_error(ErrorCode::kInvalidArgument, "cpu ops copy: {} to {}",
                        dtype_name(src.dtype()), dtype_name(dst.dtype()));
    }
    for (int64_t t = 0; t < dst.rows(); ++t) {
      if (src.dtype() == dst.dtype()) {
        std::memcpy(dst.row(t), src.row(t),
                    static_cast<std::size_t>(dst.cols()) * dst.element_bytes());
        continue;
      }
      for (int64_t i = 0; i < dst.cols(); ++i) {
        store(dst.row(t), dst.dtype(), i, load(src.row(t), src.dtype(), i));
      }
    }
    return Status::ok_status();
  }

  Status argmax(ConstMatrixView logits, MatrixView ids) override {
    QL_RETURN_IF_ERROR(ops_checks::require_argmax("cpu", logits, ids));
    QL_RETURN_IF_ERROR(require_host("argmax", logits, "logits"));
    QL_RETURN_IF_ERROR(require_host("argmax", ids, "ids"));
    auto* out = ids.row_as<int32_t>(0);
    for (int64_t t = 0; t < logits.rows(); ++t) {
      out[t] = greedy_token({logits.row_as<float>(t), static_cast<std::size_t>(logits.cols())});
    }
    return Status::ok_status();
  }

  // sample_token on a copy of each row (it applies the penalty in place), the flags as ids.
  Status sample(ConstMatrixView logits, ConstMatrixView seen, const SamplingOptions& options,
                uint64_t step, MatrixView ids) override {
    QL_RETURN_IF_ERROR(ops_checks::require_sample("cpu", logits, seen, options, ids));
    QL_RETURN_IF_ERROR(require_host("sample", logits, "logits"));
    QL_RETURN_IF_ERROR(require_host("sample", ids, "ids"));
    std::vector<int32_t> seen_ids;
    if (options.repetition_penalty != 1.0) {
      QL_RETURN_IF_ERROR(require_host("sample", seen, "seen"));
      const auto* flags = seen.row_as<uint8_t>(0);
      for (int64_t i = 0; i < seen.cols(); ++i) {
        if (flags[i] != 0) seen_ids.push_back(static_cast<int32_t>(i));
      }
    }
    auto* out = ids.row_as<int32_t>(0);
    std::vector<float> row(static_cast<std::size_t>(logits.cols()));
    for (int64_t t = 0; t < logits.rows(); ++t) {
      const float* in = logits.row_as<float>(t);
      std::copy(in, in + logits.cols(), row.begin());
      out[t] = sample_token(row, seen_ids, options, step);
    }
    return Status::ok_status();
  }

 private:
  // Threads for a loop over `work` elements: small work stays on one thread (a team costs more).
  int team(int64_t work) const {
    if (omp_in_parallel()) return 1;
    return work < (int64_t{1} << 15) ? 1 : threads_;
  }

  int threads_;
  VectorForm form_;       // attention's tile steps
  const RowSteps* rows_;  // RMSNorm and SiLU * mul rows; null: the portable loops
};

}  // namespace

std::unique_ptr<DecoderOps> make_cpu_ops(int threads, VectorForm form) {
  if (!cpu_runs(form)) form = VectorForm::kPortable;
  return std::make_unique<CpuOps>(threads, form);
}

}  // namespace qlinear
