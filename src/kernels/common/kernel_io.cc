#include "kernels/common/kernel_io.h"

#include <fmt/format.h>

#include <cstring>
#include <variant>

#include "qlinear/dtype.h"

namespace qlinear {

namespace {

bool is_float16_or_32(DType dtype) {
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
  if (!is_float16_or_32(w->dtype)) {
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

void rows_to_f32(ConstMatrixView x, int64_t first, int64_t count, float* out) {
  const int64_t cols = x.cols();
  for (int64_t r = 0; r < count; ++r) {
    convert_to_f32(x.row(first + r), x.dtype(), static_cast<std::size_t>(cols), out + r * cols);
  }
}

void store_floats(const float* src, int64_t count, DType dtype, void* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float));
      return;
    case DType::kBF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::kF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = f32_to_f16(src[i]);
      return;
    }
    default:
      return;  // check() admits f32, bf16 and f16 outputs only
  }
}

void store_rows(const float* src, int64_t src_ld, MatrixView y) {
  for (int64_t r = 0; r < y.rows(); ++r)
    store_floats(src + r * src_ld, y.cols(), y.dtype(), y.row(r));
}

void add_bias(const std::vector<float>& bias, int64_t M, int64_t N, float* y) {
  if (bias.empty()) return;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) y[m * N + n] += bias[n];
  }
}

}  // namespace qlinear
