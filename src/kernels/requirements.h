// Small helpers for LinearKernel::check(): each returns the rejection for one requirement, or
// nullopt when it holds, so a check() reads as a flat list (`if (auto v = ...) return *v;`).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"

namespace qlinear {

inline std::string_view weight_scheme_name(WeightScheme scheme) {
  switch (scheme) {
    case WeightScheme::kInt:
      return "int";
    case WeightScheme::kFp8:
      return "fp8";
    case WeightScheme::kDense:
      return "dense";
  }
  return "unknown";
}

// Channelwise int weights carry group_size == K (K_local after row-parallel sharding).
inline bool is_channelwise(const LinearProblem& problem) {
  return problem.group_size == problem.K && !problem.act_order;
}

// Row-parallel tensor parallelism split K: act-order kernels that need all of K refuse this.
inline bool k_partitioned(const LinearProblem& problem) { return problem.full_K != problem.K; }

inline std::optional<Verdict> require_scheme(const LinearProblem& problem, WeightScheme scheme) {
  if (problem.scheme == scheme) return std::nullopt;
  return Verdict::reject(Reason::kScheme,
                         fmt::format("needs {} weights, problem has {}", weight_scheme_name(scheme),
                                     weight_scheme_name(problem.scheme)));
}

inline std::optional<Verdict> require_alignment(const LinearProblem& problem, int64_t k_multiple,
                                                int64_t n_multiple) {
  if (problem.K % k_multiple != 0) {
    return Verdict::reject(Reason::kAlignment,
                           fmt::format("K={} not a multiple of {}", problem.K, k_multiple));
  }
  if (problem.N % n_multiple != 0) {
    return Verdict::reject(Reason::kAlignment,
                           fmt::format("N={} not a multiple of {}", problem.N, n_multiple));
  }
  return std::nullopt;
}

inline std::optional<Verdict> require_act_dtype(const LinearProblem& problem,
                                                std::initializer_list<DType> allowed) {
  std::string names;
  for (DType dtype : allowed) {
    if (dtype == problem.act_dtype) return std::nullopt;
    names += names.empty() ? "" : "/";
    names += dtype_name(dtype);
  }
  return Verdict::reject(Reason::kDtype, fmt::format("activations must be {}, problem has {}",
                                                     names, dtype_name(problem.act_dtype)));
}

inline std::optional<Verdict> require_fp8_mode(const LinearProblem& problem, Fp8Mode mode) {
  if (problem.fp8_mode == mode) return std::nullopt;
  return Verdict::reject(Reason::kFp8Mode,
                         fmt::format("runs {} only, problem mode is {}", fp8_mode_name(mode),
                                     fp8_mode_name(problem.fp8_mode)));
}

}  // namespace qlinear
