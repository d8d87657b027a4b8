#include "kernels/common/activation_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qlinear/dtype.h"

namespace qlinear {

namespace {

float absmax(const float* x, int64_t count) {
  float m = 0.0f;
  for (int64_t i = 0; i < count; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

float dynamic_scale(float amax) { return std::max(amax / kF8E4M3Max, kFp8ActScaleFloor); }

uint8_t encode(float scaled) { return f32_to_f8e4m3(std::clamp(scaled, -kF8E4M3Max, kF8E4M3Max)); }

// The integer modes' symmetric scale of a group whose largest |x| is `amax` (NaN: the group holds
// NaN or infinity, and its scale stays NaN), and the code of x under scale s (not NaN).
float symmetric_scale(float amax, float max_code, float floor) {
  return std::isnan(amax) ? amax : std::max(amax / max_code, floor);
}
float symmetric_code(float x, float s, float max_code) {
  return std::clamp(std::nearbyint(x / s), -max_code, max_code);
}
// NaN when x holds a NaN or an infinity, else max |x|.
float finite_absmax(const float* x, int64_t count) {
  float a = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    const float v = std::fabs(x[i]);
    if (!std::isfinite(v)) return std::numeric_limits<float>::quiet_NaN();
    a = std::max(a, v);
  }
  return a;
}

}  // namespace

float activation_scale_at(ActQuant kind, const float* scales, int64_t K, int64_t group_k, int64_t m,
                          int64_t k) {
  switch (kind) {
    case ActQuant::kDynamicToken:
      return scales[m];
    case ActQuant::kDynamicGroup:
      return scales[m * ((K + group_k - 1) / group_k) + k / group_k];
    default:
      return scales[0];
  }
}

float QuantizedActivations::scale(int64_t m, int64_t k) const {
  return activation_scale_at(kind, scales.data(), K, group_k, m, k);
}

int64_t activation_scale_count(ActQuant kind, int64_t M, int64_t K, int64_t group_k) {
  switch (kind) {
    case ActQuant::kDynamicToken:
      return M;
    case ActQuant::kDynamicGroup:
      return group_k > 0 ? M * ((K + group_k - 1) / group_k) : 0;
    case ActQuant::kDynamicTensor:
    case ActQuant::kStaticTensor:
      return 1;
    case ActQuant::kNone:
      return 0;
  }
  return 0;
}

Status quantize_activations_into(const float* x, int64_t M, int64_t K, ActQuant kind,
                                 float static_scale, int64_t group_k, uint8_t* codes,
                                 float* scales) {
  if (M < 0 || K <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "quantize_activations: shape [M={}, K={}] is invalid (need M >= 0, K > 0)", M,
                      K);
  }
  switch (kind) {
    case ActQuant::kNone:
      return make_error(ErrorCode::kInvalidArgument,
                        "quantize_activations: activation quantization \"{}\" quantizes nothing "
                        "(W8A8 needs dynamic token/tensor/group or static tensor)",
                        act_quant_name(kind));
    case ActQuant::kDynamicToken:
      for (int64_t m = 0; m < M; ++m) {
        const float* row = x + m * K;
        const float s = dynamic_scale(absmax(row, K));
        scales[m] = s;
        for (int64_t k = 0; k < K; ++k) codes[m * K + k] = encode(row[k] / s);
      }
      return Status::ok_status();
    case ActQuant::kDynamicGroup: {
      if (group_k <= 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "quantize_activations: dynamic per-group needs group_k > 0, got {}",
                          group_k);
      }
      const int64_t groups = (K + group_k - 1) / group_k;
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t k0 = g * group_k;
          const int64_t k1 = std::min(K, k0 + group_k);
          const float s = dynamic_scale(absmax(x + m * K + k0, k1 - k0));
          scales[m * groups + g] = s;
          for (int64_t k = k0; k < k1; ++k) codes[m * K + k] = encode(x[m * K + k] / s);
        }
      }
      return Status::ok_status();
    }
    case ActQuant::kDynamicTensor:
    case ActQuant::kStaticTensor: {
      float s = static_scale;
      if (kind == ActQuant::kDynamicTensor) {
        s = dynamic_scale(absmax(x, M * K));
      } else if (!(std::isfinite(s) && s > 0.0f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "quantize_activations: static input_scale={} must be finite and > 0 "
                          "(the checkpoint's input_scale)",
                          s);
      }
      scales[0] = s;
      const float inv = 1.0f / s;
      for (int64_t i = 0; i < M * K; ++i) codes[i] = encode(x[i] * inv);
      return Status::ok_status();
    }
  }
  return make_error(ErrorCode::kInternal, "quantize_activations: unknown ActQuant value {}",
                    static_cast<int>(kind));
}

Result<QuantizedActivations> quantize_activations(const float* x, int64_t M, int64_t K,
                                                  ActQuant kind, float static_scale,
                                                  int64_t group_k) {
  QuantizedActivations q;
  q.kind = kind;
  q.M = M;
  q.K = K;
  q.group_k = kind == ActQuant::kDynamicGroup ? group_k : K;
  q.codes.resize(static_cast<std::size_t>(std::max<int64_t>(M, 0) * std::max<int64_t>(K, 0)));
  q.scales.resize(static_cast<std::size_t>(
      std::max<int64_t>(activation_scale_count(kind, std::max<int64_t>(M, 0), K, group_k), 1)));
  QL_RETURN_IF_ERROR(quantize_activations_into(x, M, K, kind, static_scale, group_k, q.codes.data(),
                                               q.scales.data()));
  q.scales.resize(static_cast<std::size_t>(activation_scale_count(kind, M, K, group_k)));
  return q;
}

void dequantize_activations(const QuantizedActivations& q, float* out) {
  for (int64_t m = 0; m < q.M; ++m) {
    for (int64_t k = 0; k < q.K; ++k) {
      out[m * q.K + k] = f8e4m3_to_f32(q.codes[m * q.K + k]) * q.scale(m, k);
    }
  }
}

ActQuant w8a8_act_quant(const LinearProblem& problem) {
  if (problem.act_quant != ActQuant::kNone) return problem.act_quant;
  return problem.fp8_weight == Fp8WeightGranularity::kBlock ? ActQuant::kDynamicGroup
                                                            : ActQuant::kDynamicToken;
}

int64_t w8a8_act_group_k(const LinearProblem& problem) {
  if (problem.fp8_weight == Fp8WeightGranularity::kBlock && problem.block_k > 0) {
    return problem.block_k;
  }
  return kDefaultActGroupK;
}

void quantize_int8_activations_into(const float* x, int64_t M, int64_t K, const int32_t* group_of_k,
                                    int64_t groups, int8_t* codes, float* scales, float* absmax) {
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * K;
    std::fill(absmax, absmax + groups, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      // A NaN or infinity marks its group's absmax NaN for good.
      float& a = absmax[group_of_k[k]];
      if (std::isnan(a)) continue;
      const float v = std::fabs(row[k]);
      a = std::isfinite(v) ? std::max(a, v) : std::numeric_limits<float>::quiet_NaN();
    }
    float* row_scales = scales + m * groups;
    for (int64_t g = 0; g < groups; ++g) {
      // A group holding NaN or infinity gets a NaN scale and zero codes: its outputs are NaN, as
      // floating-point activations would make them; no code is ever cast from a NaN.
      row_scales[g] = symmetric_scale(absmax[g], 127.0f, kInt8ActScaleFloor);
    }
    int8_t* row_codes = codes + m * K;
    for (int64_t k = 0; k < K; ++k) {
      const float s = row_scales[group_of_k[k]];
      if (std::isnan(s)) {
        row_codes[k] = 0;
        continue;
      }
      row_codes[k] = static_cast<int8_t>(symmetric_code(row[k], s, 127.0f));
    }
  }
}

Int8Activations quantize_int8_activations(const float* x, int64_t M, int64_t K,
                                          const std::vector<int32_t>& group_of_k, int64_t groups) {
  Int8Activations q;
  q.M = M;
  q.K = K;
  q.groups = groups;
  q.codes.assign(static_cast<size_t>(M * K), 0);
  q.scales.assign(static_cast<size_t>(M * groups), 0.0f);
  std::vector<float> absmax(static_cast<size_t>(groups));
  quantize_int8_activations_into(x, M, K, group_of_k.data(), groups, q.codes.data(),
                                 q.scales.data(), absmax.data());
  return q;
}

std::vector<int32_t> int8_activation_groups(const IntWeights& w) {
  std::vector<int32_t> group_of_k(static_cast<size_t>(w.K));
  for (int64_t k = 0; k < w.K; ++k) group_of_k[k] = static_cast<int32_t>(w.group_of(k));
  return group_of_k;
}

Int8Activations quantize_int8_activations(const float* x, int64_t M, int64_t K,
                                          int64_t group_size) {
  std::vector<int32_t> group_of_k(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) group_of_k[k] = static_cast<int32_t>(k / group_size);
  return quantize_int8_activations(x, M, K, group_of_k, K / group_size);
}

void dequantize_int8_activations(const Int8Activations& q, const std::vector<int32_t>& group_of_k,
                                 float* out) {
  for (int64_t m = 0; m < q.M; ++m) {
    for (int64_t k = 0; k < q.K; ++k) {
      out[m * q.K + k] =
          static_cast<float>(q.codes[m * q.K + k]) * q.scales[m * q.groups + group_of_k[k]];
    }
  }
}

Int16Activations quantize_int16_activations(const float* x, int64_t M, int64_t K, int64_t block,
                                            bool residual) {
  Int16Activations q;
  q.M = M;
  q.K = K;
  q.block = block;
  q.rows_per_input = residual ? 2 : 1;
  const int64_t blocks = K / block;
  q.codes.assign(static_cast<size_t>(M * q.rows_per_input * K), 0);
  q.scales.assign(static_cast<size_t>(M * q.rows_per_input * blocks), 0.0f);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t hi = m * q.rows_per_input;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xs = x + m * K + b * block;
      const float s =
          symmetric_scale(finite_absmax(xs, block), kInt16ActMaxCode, kInt16ActScaleFloor);
      const float s_lo = s * kInt16ActResidualScale;
      q.scales[hi * blocks + b] = s;
      if (residual) q.scales[(hi + 1) * blocks + b] = s_lo;
      if (std::isnan(s)) continue;  // zero codes
      for (int64_t i = 0; i < block; ++i) {
        const int64_t k = b * block + i;
        const float code = symmetric_code(xs[i], s, kInt16ActMaxCode);
        q.codes[hi * K + k] = static_cast<int16_t>(code);
        if (residual) {
          const float r = std::fma(-s, code, xs[i]);
          q.codes[(hi + 1) * K + k] =
              static_cast<int16_t>(symmetric_code(r, s_lo, kInt16ActMaxCode));
        }
      }
    }
  }
  return q;
}

void dequantize_int16_activations(const Int16Activations& q, float* out) {
  const int64_t blocks = q.K / q.block;
  for (int64_t m = 0; m < q.M; ++m) {
    for (int64_t k = 0; k < q.K; ++k) {
      float v = 0.0f;
      for (int j = 0; j < q.rows_per_input; ++j) {
        const int64_t row = m * q.rows_per_input + j;
        v += static_cast<float>(q.codes[row * q.K + k]) * q.scales[row * blocks + k / q.block];
      }
      out[m * q.K + k] = v;
    }
  }
}

}  // namespace qlinear
