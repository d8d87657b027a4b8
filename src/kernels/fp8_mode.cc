// The FP8 mode table. The one place qlinear decides W8A8 vs W8A16:
//
//   checkpoint activations | platform   | --linear-backend   | mode
//   -----------------------+------------+--------------------+------------------------------------
//   none (weight-only)     | any        | any                | W8A16
//   quantized              | opencl     | auto, reference    | W8A16 (vLLM #43645: W8A8 was slower
//                          |            |                    |   than W8A16 on Intel GPUs)
//   quantized              | opencl     | native, blas       | W8A8, forced (as vLLM PR #49664:
//                          |            |                    |   --linear-backend xpu / torch)
//   quantized              | cpu, cuda  | any                | W8A8 when a kernel the policy allows
//                          |            |                    |   accepts W8A8, else W8A16
//
// cpu/cuda refinement: a reference kernel taking W8A8 does not outvote a non-reference kernel
// taking W8A16 (the reference path is the slow oracle; it only decides the mode when it is all
// the policy leaves, e.g. --linear-backend reference, where it runs the checkpoint's numerics).
#include "kernels/fp8_mode.h"

#include <fmt/format.h>

namespace qlinear {
namespace {

// The problem grammar's spelling (problem.cc), so explain and dispatch lines read alike.
std::string_view act_spelling(ActQuant act) {
  switch (act) {
    case ActQuant::kNone:
      return "none";
    case ActQuant::kDynamicToken:
      return "dyn-token";
    case ActQuant::kDynamicTensor:
      return "dyn-tensor";
    case ActQuant::kStaticTensor:
      return "static-tensor";
    case ActQuant::kDynamicGroup:
      return "dyn-group";
  }
  return "unknown";
}

// The first kernel the policy allows that accepts `problem` in `mode`, or null.
const LinearKernel* first_acceptor(LinearProblem problem, Fp8Mode mode, const Device& device,
                                   const SelectionPolicy& policy,
                                   const std::vector<const LinearKernel*>& kernels) {
  problem.fp8_mode = mode;
  for (const LinearKernel* kernel : kernels) {
    if (!policy_verdict(*kernel, policy).ok()) continue;
    if (kernel->check(problem, device).ok()) return kernel;
  }
  return nullptr;
}

}  // namespace

Fp8ModeDecision decide_fp8_mode(const LinearProblem& problem, const Device& device,
                                const SelectionPolicy& policy,
                                const std::vector<const LinearKernel*>& kernels) {
  if (problem.scheme != WeightScheme::kFp8) return {Fp8Mode::kNone, ""};
  if (problem.fp8_mode != Fp8Mode::kNone) {
    return {problem.fp8_mode, "given by the problem string"};
  }
  if (problem.act_quant == ActQuant::kNone) {
    return {Fp8Mode::kW8A16, "the checkpoint does not quantize activations"};
  }
  if (device.platform == Platform::kOpenCl) {
    if (policy.backend == LinearBackend::kNative || policy.backend == LinearBackend::kBlas) {
      return {Fp8Mode::kW8A8, fmt::format("opencl with --linear-backend {} forces W8A8",
                                          linear_backend_name(policy.backend))};
    }
    return {Fp8Mode::kW8A16,
            "opencl default (W8A8 was slower than W8A16 on Intel GPUs); --linear-backend native "
            "or blas forces W8A8"};
  }
  const LinearKernel* w8a8 = first_acceptor(problem, Fp8Mode::kW8A8, device, policy, kernels);
  if (w8a8 == nullptr) {
    return {Fp8Mode::kW8A16,
            fmt::format("the checkpoint quantizes activations ({}) but no allowed kernel runs W8A8 "
                        "for this problem on this device",
                        act_spelling(problem.act_quant))};
  }
  if (w8a8->family() == Family::kReference) {
    const LinearKernel* w8a16 = first_acceptor(problem, Fp8Mode::kW8A16, device, policy, kernels);
    if (w8a16 != nullptr && w8a16->family() != Family::kReference) {
      return {
          Fp8Mode::kW8A16,
          fmt::format("only the reference kernel runs W8A8 here; {} runs W8A16", w8a16->name())};
    }
  }
  return {Fp8Mode::kW8A8, fmt::format("the checkpoint quantizes activations ({}) and {} runs W8A8",
                                      act_spelling(problem.act_quant), w8a8->name())};
}

}  // namespace qlinear
