// The FP8 execution mode (W8A8 or W8A16) of a layer: decided here only, from the platform, the
// checkpoint's activation quantization and the user's policy. Formats never decide it, and no
// kernel list order decides it implicitly (prior_art.md §5.12).
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/problem.h"
#include "kernels/select.h"
#include "qlinear/device.h"

namespace qlinear {

struct Fp8ModeDecision {
  Fp8Mode mode = Fp8Mode::kNone;
  std::string reason;  // one clause for explain: "opencl default (W8A8 was slower on Intel GPUs)"
};

// The mode for `problem` on `device` with `kernels` as the candidates (kNone for non-FP8
// problems; an already decided problem.fp8_mode is kept, e.g. a parsed dispatch line).
Fp8ModeDecision decide_fp8_mode(const LinearProblem& problem, const Device& device,
                                const SelectionPolicy& policy,
                                const std::vector<const LinearKernel*>& kernels);

}  // namespace qlinear
