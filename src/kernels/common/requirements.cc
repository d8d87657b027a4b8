#include "kernels/common/requirements.h"

#include <fmt/format.h>

#include <string>

namespace qlinear {
namespace {

Verdict require_dtype(DType actual, std::initializer_list<DType> allowed, std::string_view what) {
  std::string names;
  for (DType dtype : allowed) {
    if (dtype == actual) return Verdict::accept();
    names += names.empty() ? "" : "/";
    names += dtype_name(dtype);
  }
  return Verdict::reject(Reason::kDtype, fmt::format("{} must be {}, problem has {}", what, names,
                                                     dtype_name(actual)));
}

}  // namespace

std::string_view weight_scheme_name(WeightScheme scheme) {
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

Verdict require_platform(const Device& device, Platform platform) {
  if (device.platform == platform) return Verdict::accept();
  return Verdict::reject(Reason::kWrongPlatform,
                         fmt::format("device is {}; needs {}", platform_name(device.platform),
                                     platform_name(platform)));
}

Verdict require_scheme(const LinearProblem& problem, WeightScheme scheme) {
  if (problem.scheme == scheme) return Verdict::accept();
  return Verdict::reject(Reason::kScheme,
                         fmt::format("needs {} weights, problem has {}", weight_scheme_name(scheme),
                                     weight_scheme_name(problem.scheme)));
}

Verdict require_alignment(const LinearProblem& problem, int64_t k_multiple, int64_t n_multiple) {
  if (problem.K % k_multiple != 0) {
    return Verdict::reject(Reason::kAlignment,
                           fmt::format("K={} not a multiple of {}", problem.K, k_multiple));
  }
  if (problem.N % n_multiple != 0) {
    return Verdict::reject(Reason::kAlignment,
                           fmt::format("N={} not a multiple of {}", problem.N, n_multiple));
  }
  return Verdict::accept();
}

Verdict require_act_dtype(const LinearProblem& problem, std::initializer_list<DType> allowed) {
  return require_dtype(problem.act_dtype, allowed, "activations");
}

Verdict require_out_dtype(const LinearProblem& problem, std::initializer_list<DType> allowed) {
  return require_dtype(problem.out_dtype, allowed, "the output");
}

Verdict require_io_dtypes(const LinearProblem& problem) {
  QL_REQUIRE(require_act_dtype(problem, {DType::kF32, DType::kBF16, DType::kF16}));
  QL_REQUIRE(require_out_dtype(problem, {DType::kF32, DType::kBF16, DType::kF16}));
  return Verdict::accept();
}

Verdict require_fp8_mode(const LinearProblem& problem, Fp8Mode mode) {
  if (problem.fp8_mode == mode) return Verdict::accept();
  return Verdict::reject(Reason::kFp8Mode,
                         fmt::format("runs {} only, problem mode is {}", fp8_mode_name(mode),
                                     fp8_mode_name(problem.fp8_mode)));
}

Verdict require_m_range(const LinearProblem& problem, int64_t m_min, int64_t m_max) {
  if (problem.m_min >= m_min && problem.m_max <= m_max) return Verdict::accept();
  LinearProblem range;
  range.m_min = m_min;
  range.m_max = m_max;
  return Verdict::reject(Reason::kMRange,
                         fmt::format("runs {} rows, problem covers {}", range.m_range_string(),
                                     problem.m_range_string()));
}

Verdict require_int_problem(const LinearProblem& p) {
  QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
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
  return require_io_dtypes(p);
}

Verdict require_int_activations(const LinearProblem& p, bool int8_kernel) {
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

Verdict require_fp8_problem(const LinearProblem& p) {
  QL_REQUIRE(require_scheme(p, WeightScheme::kFp8));
  if (p.fp8_mode != Fp8Mode::kW8A8 && p.fp8_mode != Fp8Mode::kW8A16) {
    return Verdict::reject(Reason::kFp8Mode, fmt::format("fp8 mode is {}; needs w8a8 or w8a16",
                                                         fp8_mode_name(p.fp8_mode)));
  }
  if (p.fp8_weight == Fp8WeightGranularity::kBlock && (p.block_n <= 0 || p.block_k <= 0)) {
    return Verdict::reject(
        Reason::kFp8Granularity,
        fmt::format("block [{}, {}]; block sizes must be > 0", p.block_n, p.block_k));
  }
  return require_io_dtypes(p);
}

Verdict require_dense_problem(const LinearProblem& p) {
  QL_REQUIRE(require_scheme(p, WeightScheme::kDense));
  if (p.weight_dtype != DType::kF32 && p.weight_dtype != DType::kBF16 &&
      p.weight_dtype != DType::kF16) {
    return Verdict::reject(Reason::kDtype, fmt::format("dense weights are {}; needs f32, bf16 "
                                                       "or f16",
                                                       dtype_name(p.weight_dtype)));
  }
  return require_io_dtypes(p);
}

}  // namespace qlinear
