// Kernel selection: walk a platform's ordered kernel list under the user's policy
// (--linear-backend, --kernel, QLINEAR_DISABLED_KERNELS), decide the FP8 mode in one table
// (fp8_mode.h), and keep every candidate's verdict so `explain` and the no-kernel error can show
// why each one was or was not used.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kernels/kernel.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"
#include "qlinear/device.h"
#include "qlinear/linear.h"

namespace qlinear {

// The same against an explicit set of kernels (tests use fakes).
Result<SelectionPolicy> make_policy(std::string_view backend, std::string_view kernel,
                                    std::string_view disabled_env,
                                    const std::vector<const LinearKernel*>& known);

// The policy's verdict on `kernel` before its own check(): kDisabledByUser, kNotRequested,
// kBackendFilter, or accept.
Verdict policy_verdict(const LinearKernel& kernel, const SelectionPolicy& policy);

struct Candidate {
  const LinearKernel* kernel = nullptr;
  Verdict verdict;
};

struct Selection {
  const LinearKernel* kernel = nullptr;  // the first candidate that accepted; null: none did
  LinearProblem problem;                 // with fp8_mode and int8_activations decided
  std::vector<Candidate> candidates;     // every candidate in priority order
  // Why this FP8 mode, or why int8 activations for an int problem ("" when neither applies).
  std::string mode_reason;
};

// "FP8 mode w8a8" / "int activations a8": the mode a selection decided, for messages ("" when
// the problem has no mode to decide).
std::string mode_label(const LinearProblem& problem);

// Evaluates every candidate of `kernels` in order (later ones too, for explain), logging one
// QLINEAR_VERBOSE=dispatch line per candidate. Never fails: `kernel` is null when nothing fits.
Selection evaluate_kernels(const std::vector<const LinearKernel*>& kernels,
                           const LinearProblem& problem, const Device& device,
                           const SelectionPolicy& policy, std::string_view layer_name);

// evaluate_kernels() without dispatch lines (for probing M ranges).
Selection evaluate_kernels_quietly(const std::vector<const LinearKernel*>& kernels,
                                   const LinearProblem& problem, const Device& device,
                                   const SelectionPolicy& policy);

// The kNoKernel error for a selection without a kernel: every candidate with its reason and
// remedy, the FP8 mode and why.
Status no_kernel_error(const Selection& selection, const Device& device,
                       const SelectionPolicy& policy, std::string_view layer_name);

// evaluate_kernels() over `kernels`, or the kNoKernel error.
Result<Selection> select_from(const std::vector<const LinearKernel*>& kernels,
                              const LinearProblem& problem, const Device& device,
                              const SelectionPolicy& policy, std::string_view layer_name);

// select_from() over kernels_for(device.platform).
Result<Selection> select_kernel(const LinearProblem& problem, const Device& device,
                                const SelectionPolicy& policy, std::string_view layer_name);

// One range of M of a layer and its selection (problem.m_min/m_max are the range).
struct BucketSelection {
  Selection selection;
  std::vector<Engine> engines;  // the chosen kernel's algorithms over the range (empty: none)
};

// Cuts the problem's M range where any candidate's check() may change its answer
// (LinearKernel::m_breakpoints), selects in each piece, and merges neighbours that chose the same
// kernel (their verdicts are then re-evaluated over the merged range). Never fails: a bucket
// without a kernel has selection.kernel == null (its no_kernel_error says why).
std::vector<BucketSelection> evaluate_buckets(const std::vector<const LinearKernel*>& kernels,
                                              const LinearProblem& problem, const Device& device,
                                              const SelectionPolicy& policy,
                                              std::string_view layer_name);

// evaluate_buckets() over kernels_for(device.platform), or the kNoKernel error of the first
// bucket no kernel accepts.
Result<std::vector<BucketSelection>> select_buckets(const LinearProblem& problem,
                                                    const Device& device,
                                                    const SelectionPolicy& policy,
                                                    std::string_view layer_name);

}  // namespace qlinear
