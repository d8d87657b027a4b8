#include "kernels/reference/kernel_io.h"

#include <fmt/format.h>

#include <variant>

#include "core/dtype.h"

namespace qlinear {

namespace {

bool is_activation_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
}

// "<kernel>: layer "<name>": <what>"
template <class... Args>
Status weights_error(std::string_view kernel, const Canonical& weights,
                     fmt::format_string<Args...> format, Args&&... args) {
  return make_error(ErrorCode::kInvalidArgument, "{}: layer \"{}\": {}", kernel, weights.name,
                    fmt::format(format, std::forward<Args>(args)...));
}

Status check_count(std::string_view kernel, const Canonical& weights, std::string_view what,
                   std::size_t actual, int64_t expected, std::string_view rule) {
  if (static_cast<int64_t>(actual) == expected) return Status::ok_status();
  return weights_error(kernel, weights, "{} has {} entries; expected {} = {}", what, actual, rule,
                       expected);
}

Status check_bias(std::string_view kernel, const Canonical& weights, const std::vector<float>& bias,
                  int64_t N) {
  if (bias.empty()) return Status::ok_status();
  return check_count(kernel, weights, "bias", bias.size(), N, "N");
}

}  // namespace

Verdict check_cpu_device(const Device& device) {
  if (device.platform == Platform::kCpu) return Verdict::accept();
  return Verdict::reject(Reason::kWrongPlatform,
                         fmt::format("device is {}; needs cpu", platform_name(device.platform)));
}

Verdict check_io_dtypes(const LinearProblem& problem) {
  if (!is_activation_dtype(problem.act_dtype)) {
    return Verdict::reject(Reason::kDtype, fmt::format("activations are {}; needs f32, bf16 or f16",
                                                       dtype_name(problem.act_dtype)));
  }
  if (problem.out_dtype != DType::kF32) {
    return Verdict::reject(Reason::kDtype,
                           fmt::format("output is {}; needs f32", dtype_name(problem.out_dtype)));
  }
  return Verdict::accept();
}

Result<std::vector<float>> activations_as_f32(const TensorView& x, int64_t K,
                                              std::string_view kernel) {
  if (x.shape.size() != 2 || x.dim(1) != K || !x.is_contiguous() || !is_activation_dtype(x.dtype) ||
      (x.data == nullptr && x.numel() > 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: x is {} {}{}; expected a contiguous [M, K={}] tensor of f32, bf16 or "
                      "f16",
                      kernel, dtype_name(x.dtype), shape_to_string(x.shape),
                      x.is_contiguous() ? "" : " (strided)", K);
  }
  std::vector<float> out(static_cast<std::size_t>(x.numel()));
  if (!out.empty()) convert_to_f32(x.data, x.dtype, out.size(), out.data());
  return out;
}

Status check_output(const TensorView& y, int64_t M, int64_t N, std::string_view kernel) {
  if (y.shape.size() != 2 || y.dim(0) != M || y.dim(1) != N || !y.is_contiguous() ||
      y.dtype != DType::kF32 || (y.data == nullptr && y.numel() > 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: y is {} {}{}; expected a contiguous f32 tensor [M={}, N={}]", kernel,
                      dtype_name(y.dtype), shape_to_string(y.shape),
                      y.is_contiguous() ? "" : " (strided)", M, N);
  }
  return Status::ok_status();
}

Result<const IntWeights*> int_weights_of(const Canonical& weights, std::string_view kernel) {
  const auto* w = std::get_if<IntWeights>(&weights.weights);
  if (w == nullptr) return weights_error(kernel, weights, "weights are not integer-quantized");
  if (w->bits != 2 && w->bits != 4 && w->bits != 8) {
    return weights_error(kernel, weights, "bits={}; int weights have 2, 4 or 8 bits", w->bits);
  }
  const int pf = w->pack_factor();
  if (w->K <= 0 || w->N <= 0 || w->K % pf != 0) {
    return weights_error(kernel, weights, "K={} N={}; need K, N > 0 and K a multiple of {}", w->K,
                         w->N, pf);
  }
  if (w->group_size <= 0 || w->num_groups <= 0 ||
      (w->g_idx.empty() && w->num_groups * w->group_size < w->K)) {
    return weights_error(kernel, weights,
                         "group_size={} num_groups={} do not cover K={} (need both > 0 and "
                         "num_groups*group_size >= K)",
                         w->group_size, w->num_groups, w->K);
  }
  QL_RETURN_IF_ERROR(
      check_count(kernel, weights, "qweight", w->qweight.size(), w->K / pf * w->N, "K*bits/32*N"));
  QL_RETURN_IF_ERROR(check_count(kernel, weights, "scales", w->scales.size(), w->num_groups * w->N,
                                 "num_groups*N"));
  if (!w->zeros.empty()) {
    QL_RETURN_IF_ERROR(check_count(kernel, weights, "zeros", w->zeros.size(), w->num_groups * w->N,
                                   "num_groups*N"));
  }
  if (!w->g_idx.empty()) {
    QL_RETURN_IF_ERROR(check_count(kernel, weights, "g_idx", w->g_idx.size(), w->K, "K"));
    for (std::size_t k = 0; k < w->g_idx.size(); ++k) {
      if (w->g_idx[k] < 0 || w->g_idx[k] >= w->num_groups) {
        return weights_error(kernel, weights, "g_idx[{}]={} is outside [0, num_groups={})", k,
                             w->g_idx[k], w->num_groups);
      }
    }
  }
  QL_RETURN_IF_ERROR(check_bias(kernel, weights, w->bias, w->N));
  return w;
}

Result<const Fp8Weights*> fp8_weights_of(const Canonical& weights, std::string_view kernel) {
  const auto* w = std::get_if<Fp8Weights>(&weights.weights);
  if (w == nullptr) return weights_error(kernel, weights, "weights are not FP8");
  if (w->K <= 0 || w->N <= 0) {
    return weights_error(kernel, weights, "K={} N={}; need both > 0", w->K, w->N);
  }
  QL_RETURN_IF_ERROR(
      check_count(kernel, weights, "qweight", w->qweight.size(), w->N * w->K, "N*K"));
  if (w->is_block()) {
    if (w->block_n <= 0 || w->block_k <= 0) {
      return weights_error(kernel, weights, "block [{}, {}]; block sizes must be > 0", w->block_n,
                           w->block_k);
    }
    const int64_t rows = (w->N + w->block_n - 1) / w->block_n;
    const int64_t cols = (w->K + w->block_k - 1) / w->block_k;
    QL_RETURN_IF_ERROR(check_count(kernel, weights, "block scale", w->scale.size(), rows * cols,
                                   "ceil(N/block_n)*ceil(K/block_k)"));
  } else {
    QL_RETURN_IF_ERROR(check_count(kernel, weights, "scale", w->scale.size(), w->N, "N"));
  }
  QL_RETURN_IF_ERROR(check_bias(kernel, weights, w->bias, w->N));
  return w;
}

Result<const DenseWeights*> dense_weights_of(const Canonical& weights, std::string_view kernel) {
  const auto* w = std::get_if<DenseWeights>(&weights.weights);
  if (w == nullptr) return weights_error(kernel, weights, "weights are not dense");
  if (!is_activation_dtype(w->dtype)) {
    return weights_error(kernel, weights, "dense dtype {}; needs f32, bf16 or f16",
                         dtype_name(w->dtype));
  }
  if (w->K <= 0 || w->N <= 0) {
    return weights_error(kernel, weights, "K={} N={}; need both > 0", w->K, w->N);
  }
  QL_RETURN_IF_ERROR(check_count(kernel, weights, "data (bytes)", w->data.size(),
                                 w->N * w->K * static_cast<int64_t>(dtype_size(w->dtype)),
                                 "N*K*dtype_size"));
  QL_RETURN_IF_ERROR(check_bias(kernel, weights, w->bias, w->N));
  return w;
}

void add_bias(const std::vector<float>& bias, int64_t M, int64_t N, float* y) {
  if (bias.empty()) return;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) y[m * N + n] += bias[n];
  }
}

Verdict check_int_problem(const LinearProblem& p) {
  if (p.scheme != WeightScheme::kInt) {
    return Verdict::reject(Reason::kScheme, "needs int weights");
  }
  if (p.bits != 2 && p.bits != 4 && p.bits != 8) {
    return Verdict::reject(Reason::kBits, fmt::format("bits={}; handles 2, 4, 8", p.bits));
  }
  if (p.group_size <= 0 || p.K % p.group_size != 0) {
    return Verdict::reject(Reason::kGroupSize,
                           fmt::format("group_size={} does not divide K={}", p.group_size, p.K));
  }
  if (p.K % (32 / p.bits) != 0) {
    return Verdict::reject(Reason::kAlignment,
                           fmt::format("K={} not a multiple of {}", p.K, 32 / p.bits));
  }
  return check_io_dtypes(p);
}

Verdict check_int_activations(const LinearProblem& p, bool int8_kernel) {
  if (p.int8_activations && !int8_kernel) {
    return Verdict::reject(Reason::kActivationQuant,
                           "int8 activations asked for (--int8-activations); this kernel keeps "
                           "activations in floating point");
  }
  if (!p.int8_activations && int8_kernel) {
    return Verdict::reject(Reason::kActivationQuant,
                           "runs int8 activations only, and they were not asked for (opt in with "
                           "--int8-activations)");
  }
  return Verdict::accept();
}

Verdict check_fp8_problem(const LinearProblem& p) {
  if (p.scheme != WeightScheme::kFp8) {
    return Verdict::reject(Reason::kScheme, "needs fp8 weights");
  }
  if (p.fp8_mode != Fp8Mode::kW8A8 && p.fp8_mode != Fp8Mode::kW8A16) {
    return Verdict::reject(Reason::kFp8Mode, fmt::format("fp8 mode is {}; needs w8a8 or w8a16",
                                                         fp8_mode_name(p.fp8_mode)));
  }
  if (p.fp8_weight == Fp8WeightGranularity::kBlock && (p.block_n <= 0 || p.block_k <= 0)) {
    return Verdict::reject(
        Reason::kFp8Granularity,
        fmt::format("block [{}, {}]; block sizes must be > 0", p.block_n, p.block_k));
  }
  return check_io_dtypes(p);
}

Verdict check_dense_problem(const LinearProblem& p) {
  if (p.scheme != WeightScheme::kDense) {
    return Verdict::reject(Reason::kScheme, "needs dense weights");
  }
  if (p.weight_dtype != DType::kF32 && p.weight_dtype != DType::kBF16 &&
      p.weight_dtype != DType::kF16) {
    return Verdict::reject(Reason::kDtype, fmt::format("dense weights are {}; needs f32, bf16 "
                                                       "or f16",
                                                       dtype_name(p.weight_dtype)));
  }
  return check_io_dtypes(p);
}

}  // namespace qlinear
