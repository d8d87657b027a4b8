#include "convert/fp8_convert.h"

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <vector>

namespace qlinear {

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_scalar_shape(const Shape& s) { return s.empty() || s == Shape{1}; }

std::string accepted_shapes(const Fp8Spec& spec, int64_t n, int64_t k) {
  if (spec.weight == Fp8WeightGranularity::kBlock) {
    return fmt::format("[ceil(N/{})={}, ceil(K/{})={}] (block {}x{})", spec.block_n,
                       ceil_div(n, spec.block_n), spec.block_k, ceil_div(k, spec.block_k),
                       spec.block_n, spec.block_k);
  }
  return fmt::format("[] or [1] (per-tensor), [N={}] or [N={}, 1] (per-channel)", n, n);
}

// Reads the single value of a [] / [1] scale tensor.
Result<float> read_scalar_scale(const RawTensor& t, std::string_view role) {
  if (!is_scalar_shape(t.shape)) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} must be [] or [1]", t.where,
                      shape_to_string(t.shape), role);
  }
  QL_ASSIGN_OR_RETURN(std::vector<float> v, read_scales(t, role));
  return v[0];
}

}  // namespace

Result<Fp8Weights> convert_fp8(const Fp8Spec& spec, const Fp8Tensors& t) {
  QL_RETURN_IF_ERROR(check_dtype(t.weight, {DType::kF8E4M3}, "an FP8 weight"));
  if (t.weight.shape.size() != 2) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; an FP8 weight must be [N, K]",
                      t.weight.where, shape_to_string(t.weight.shape));
  }
  QL_RETURN_IF_ERROR(check_byte_size(t.weight));
  Fp8Weights w;
  w.N = t.weight.shape[0];
  w.K = t.weight.shape[1];
  const auto* bytes = reinterpret_cast<const uint8_t*>(t.weight.bytes.data());
  // e4m3fn has no infinity; 0x7F and 0xFF are NaN. A NaN weight poisons every output that
  // reads it, and kernels decode such codes differently, so they never get past the load.
  for (std::size_t i = 0; i < t.weight.bytes.size(); ++i) {
    if ((bytes[i] & 0x7F) == 0x7F) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: element [{}, {}] is FP8 e4m3fn code 0x{:02X}, a NaN; FP8 weights must "
                        "be finite",
                        t.weight.where, static_cast<int64_t>(i) / w.K,
                        static_cast<int64_t>(i) % w.K, bytes[i]);
    }
  }
  w.qweight.assign(bytes, bytes + t.weight.bytes.size());
  w.activation = spec.activation;

  const Shape& ss = t.scale.shape;
  if (spec.weight == Fp8WeightGranularity::kBlock) {
    if (spec.block_n <= 0 || spec.block_k <= 0) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: block FP8 needs a positive block size, got [{}, {}]", t.weight.where,
                        spec.block_n, spec.block_k);
    }
    if (ss != Shape{ceil_div(w.N, spec.block_n), ceil_div(w.K, spec.block_k)}) {
      return make_error(ErrorCode::kMisconfigured,
                        "{} has shape {}; for a weight [N={}, K={}] the accepted scale shape is {}",
                        t.scale.where, shape_to_string(ss), w.N, w.K,
                        accepted_shapes(spec, w.N, w.K));
    }
    w.granularity = Fp8WeightGranularity::kBlock;
    w.block_n = spec.block_n;
    w.block_k = spec.block_k;
    QL_ASSIGN_OR_RETURN(w.scale, read_scales(t.scale, "FP8 weight scale"));
  } else if (is_scalar_shape(ss)) {
    QL_ASSIGN_OR_RETURN(const float s, read_scalar_scale(t.scale, "FP8 weight scale"));
    w.granularity = Fp8WeightGranularity::kTensor;
    w.scale.assign(at(w.N), s);  // per-tensor -> per-row: lossless (formats.md §4.5)
  } else if (ss == Shape{w.N} || ss == Shape{w.N, 1}) {
    w.granularity = Fp8WeightGranularity::kChannel;
    QL_ASSIGN_OR_RETURN(w.scale, read_scales(t.scale, "FP8 weight scale"));
  } else {
    return make_error(ErrorCode::kMisconfigured,
                      "{} has shape {}; for a weight [N={}, K={}] the accepted scale shapes are {}",
                      t.scale.where, shape_to_string(ss), w.N, w.K,
                      accepted_shapes(spec, w.N, w.K));
  }

  if (spec.activation == ActQuant::kStaticTensor) {
    if (!t.input_scale) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: static activation quantization needs an input_scale tensor, and the "
                        "layer has none",
                        t.weight.where);
    }
    QL_ASSIGN_OR_RETURN(w.input_scale, read_scalar_scale(*t.input_scale, "FP8 input_scale"));
  }
  if (t.bias) {
    QL_ASSIGN_OR_RETURN(w.bias, read_bias(*t.bias, w.N));
  }
  return w;
}

Result<Fp8Weights> quantize_online_fp8(const Fp8Spec& spec, const DenseTensors& t) {
  QL_RETURN_IF_ERROR(check_dense_weight(t.weight, "a weight to quantize to FP8 online"));
  Fp8Weights w;
  w.N = t.weight.shape[0];
  w.K = t.weight.shape[1];
  w.granularity = Fp8WeightGranularity::kChannel;
  w.activation = spec.activation;
  w.qweight.resize(at(w.N * w.K));
  w.scale.resize(at(w.N));
  std::vector<float> row(at(w.K));
  for (int64_t n = 0; n < w.N; ++n) {
    convert_to_f32(t.weight.bytes.data() + at(n * w.K) * dtype_size(t.weight.dtype), t.weight.dtype,
                   row.size(), row.data());
    float amax = 0.0f;
    for (int64_t k = 0; k < w.K; ++k) {
      const float v = row[at(k)];
      if (!std::isfinite(v)) {
        return make_error(ErrorCode::kCorrupt,
                          "{} element [{}, {}] is {}; online FP8 needs finite weights",
                          t.weight.where, n, k, v);
      }
      amax = std::fmax(amax, std::fabs(v));
    }
    float s = amax == 0.0f ? 1.0f : amax / kF8E4M3Max;
    if (s < FLT_MIN) s = FLT_MIN;
    w.scale[at(n)] = s;
    for (int64_t k = 0; k < w.K; ++k) w.qweight[at(n * w.K + k)] = f32_to_f8e4m3(row[at(k)] / s);
  }
  if (t.bias) {
    QL_ASSIGN_OR_RETURN(w.bias, read_bias(*t.bias, w.N));
  }
  return w;
}

}  // namespace qlinear
