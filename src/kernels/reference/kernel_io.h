// Checks every kernel shares: activation / output dtypes in check(), the x and y views in run(),
// and the internal sizes of the canonical weights in prepare() (so no kernel can read past a
// vector of a malformed Canonical), plus the f32 view of x and the bias epilogue.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/device.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"

namespace qlinear {

// Activations f32, bf16 or f16; output f32.
Verdict check_io_dtypes(const LinearProblem& problem);

// The device is a CPU (reason wrong-platform otherwise): the first check of every CPU kernel.
Verdict check_cpu_device(const Device& device);

// Checks x is a contiguous [M, K] f32/bf16/f16 tensor and returns it as f32 (exact: every bf16
// and f16 value is a float). `kernel` names the caller in errors.
Result<std::vector<float>> activations_as_f32(const TensorView& x, int64_t K,
                                              std::string_view kernel);
// Checks y is a contiguous [M, N] f32 tensor.
Status check_output(const TensorView& y, int64_t M, int64_t N, std::string_view kernel);

// The weights of `weights` when they hold that scheme and their sizes agree with each other.
Result<const IntWeights*> int_weights_of(const Canonical& weights, std::string_view kernel);
Result<const Fp8Weights*> fp8_weights_of(const Canonical& weights, std::string_view kernel);
Result<const DenseWeights*> dense_weights_of(const Canonical& weights, std::string_view kernel);

// y[m, n] += bias[n] for a row-major [M, N] y; nothing when bias is empty.
void add_bias(const std::vector<float>& bias, int64_t M, int64_t N, float* y);

// The requirements of the canonical int form that every portable kernel shares (scheme,
// shapes the form allows, activation/output dtypes); device checks stay with each kernel.
Verdict check_int_problem(const LinearProblem& problem);

// Integer-weight kernels run either the activations as they come (16-bit or f32 floats) or, when
// the user asked with --int8-activations, int8 ones (problem.int8_activations); each kernel does
// one of the two. kActivationQuant when the problem wants the other.
Verdict check_int_activations(const LinearProblem& problem, bool int8_kernel);

// The requirements of the canonical FP8 form that every portable kernel shares (scheme,
// shapes the form allows, activation/output dtypes); device checks stay with each kernel.
Verdict check_fp8_problem(const LinearProblem& problem);

// The requirements of the canonical dense form that every portable kernel shares (scheme,
// shapes the form allows, activation/output dtypes); device checks stay with each kernel.
Verdict check_dense_problem(const LinearProblem& problem);

}  // namespace qlinear
