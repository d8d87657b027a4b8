// The requirements LinearKernel::check() is written from, one way for every backend: each
// require_*() returns the rejection for one requirement (a catalogue reason plus the offending
// values) or accept, and QL_REQUIRE returns the first rejection, so a check() reads as a flat
// list:
//   QL_REQUIRE(require_platform(device, Platform::kCpu));
//   QL_REQUIRE(require_int_problem(p));
//   QL_REQUIRE(require_alignment(p, 64, 16));
//   return Verdict::accept();
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "kernels/problem.h"
#include "kernels/reasons.h"
#include "qlinear/device.h"
#include "qlinear/dtype.h"

// Returns `verdict_expr` from the enclosing check() when it rejects.
#define QL_REQUIRE(verdict_expr)                     \
  do {                                               \
    ::qlinear::Verdict ql_verdict_ = (verdict_expr); \
    if (!ql_verdict_.ok()) return ql_verdict_;       \
  } while (0)

namespace qlinear {

std::string_view weight_scheme_name(WeightScheme scheme);

// Channelwise int weights carry group_size == K (K_local after row-parallel sharding).
inline bool is_channelwise(const LinearProblem& problem) {
  return problem.group_size == problem.K && !problem.act_order;
}
// Row-parallel tensor parallelism split K: act-order kernels that need all of K refuse this.
inline bool k_partitioned(const LinearProblem& problem) { return problem.full_K != problem.K; }

// wrong-platform unless the device is of `platform`.
Verdict require_platform(const Device& device, Platform platform);
Verdict require_scheme(const LinearProblem& problem, WeightScheme scheme);
// alignment unless K % k_multiple == 0 and N % n_multiple == 0.
Verdict require_alignment(const LinearProblem& problem, int64_t k_multiple, int64_t n_multiple);
Verdict require_act_dtype(const LinearProblem& problem, std::initializer_list<DType> allowed);
Verdict require_out_dtype(const LinearProblem& problem, std::initializer_list<DType> allowed);
// Activations and outputs f32, bf16 or f16 (what every kernel family handles).
Verdict require_io_dtypes(const LinearProblem& problem);
Verdict require_fp8_mode(const LinearProblem& problem, Fp8Mode mode);
// m-range unless the problem's M range lies inside [m_min, m_max] (kUnboundedM: no upper end).
// A kernel that calls it lists m_min and m_max + 1 in m_breakpoints().
Verdict require_m_range(const LinearProblem& problem, int64_t m_min, int64_t m_max);

// The canonical int form's rules every int kernel shares (scheme, bits 2/4/8, group dividing K,
// K a multiple of the rows per packed word, io dtypes).
Verdict require_int_problem(const LinearProblem& problem);
// Integer-weight kernels run either the activations as they come (16-bit or f32 floats) or,
// when the user asked with --int8-activations, int8 ones (problem.int8_activations); each kernel
// does one of the two: activation-quant when the problem wants the other.
Verdict require_int_activations(const LinearProblem& problem, bool int8_kernel);
// The canonical FP8 form's rules (scheme, a decided mode, positive block sizes, io dtypes).
Verdict require_fp8_problem(const LinearProblem& problem);
// The canonical dense form's rules (scheme, weight dtype f32/bf16/f16, io dtypes).
Verdict require_dense_problem(const LinearProblem& problem);

}  // namespace qlinear
