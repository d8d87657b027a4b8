// Selection: policy filters, the FP8 mode table, the ordered walk, dispatch logging and the
// no-kernel error.
#include "kernels/select.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/log.h"
#include "kernels/fp8_mode.h"
#include "kernels/registry.h"

namespace qlinear {
namespace {

std::string kernel_names(const std::vector<const LinearKernel*>& kernels) {
  std::vector<std::string_view> names;
  names.reserve(kernels.size());
  for (const LinearKernel* kernel : kernels) names.push_back(kernel->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

const LinearKernel* find_in(const std::vector<const LinearKernel*>& kernels,
                            std::string_view name) {
  for (const LinearKernel* kernel : kernels) {
    if (kernel->name() == name) return kernel;
  }
  return nullptr;
}

bool backend_allows(LinearBackend backend, Family family) {
  switch (backend) {
    case LinearBackend::kAuto:
      return true;
    case LinearBackend::kNative:
      return family == Family::kNative;
    case LinearBackend::kBlas:
      return family == Family::kBlas;
    case LinearBackend::kReference:
      return family == Family::kReference;
  }
  return false;
}

std::string_view trim(std::string_view text) {
  const auto start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t");
  return text.substr(start, end - start + 1);
}

}  // namespace

std::string_view linear_backend_name(LinearBackend backend) {
  switch (backend) {
    case LinearBackend::kAuto:
      return "auto";
    case LinearBackend::kNative:
      return "native";
    case LinearBackend::kBlas:
      return "blas";
    case LinearBackend::kReference:
      return "reference";
  }
  return "unknown";
}

Result<SelectionPolicy> make_policy(std::string_view backend, std::string_view kernel,
                                    std::string_view disabled_env) {
  return make_policy(backend, kernel, disabled_env, all_kernels());
}

Result<SelectionPolicy> make_policy(std::string_view backend, std::string_view kernel,
                                    std::string_view disabled_env,
                                    const std::vector<const LinearKernel*>& known) {
  SelectionPolicy policy;
  const LinearBackend backends[] = {LinearBackend::kAuto, LinearBackend::kNative,
                                    LinearBackend::kBlas, LinearBackend::kReference};
  const auto match = std::find_if(std::begin(backends), std::end(backends), [&](LinearBackend b) {
    return linear_backend_name(b) == (backend.empty() ? "auto" : backend);
  });
  if (match == std::end(backends)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--linear-backend \"{}\" is not a backend; expected auto, native, blas or "
                      "reference",
                      backend);
  }
  policy.backend = *match;

  size_t start = 0;
  while (start <= disabled_env.size()) {
    const size_t comma = std::min(disabled_env.find(',', start), disabled_env.size());
    const std::string_view name = trim(disabled_env.substr(start, comma - start));
    start = comma + 1;
    if (name.empty()) continue;
    if (find_in(known, name) == nullptr) {
      return make_error(ErrorCode::kInvalidArgument,
                        "QLINEAR_DISABLED_KERNELS: \"{}\" is not a registered kernel; registered "
                        "kernels: {}",
                        name, kernel_names(known));
    }
    policy.disabled.emplace_back(name);
  }

  if (!kernel.empty()) {
    const LinearKernel* requested = find_in(known, kernel);
    if (requested == nullptr) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--kernel \"{}\" is not a registered kernel; registered kernels: {}",
                        kernel, kernel_names(known));
    }
    if (std::find(policy.disabled.begin(), policy.disabled.end(), kernel) !=
        policy.disabled.end()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--kernel \"{}\" is also named in QLINEAR_DISABLED_KERNELS; drop one of "
                        "them",
                        kernel);
    }
    if (!backend_allows(policy.backend, requested->family())) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--kernel \"{}\" is a {} kernel but --linear-backend {} excludes that "
                        "family; use --linear-backend auto or {}",
                        kernel, family_name(requested->family()),
                        linear_backend_name(policy.backend), family_name(requested->family()));
    }
    policy.kernel = std::string(kernel);
  }
  return policy;
}

Verdict policy_verdict(const LinearKernel& kernel, const SelectionPolicy& policy) {
  const std::string_view name = kernel.name();
  if (std::find(policy.disabled.begin(), policy.disabled.end(), name) != policy.disabled.end()) {
    return Verdict::reject(Reason::kDisabledByUser, "named in QLINEAR_DISABLED_KERNELS");
  }
  if (!policy.kernel.empty() && policy.kernel != name) {
    return Verdict::reject(Reason::kNotRequested, fmt::format("--kernel {}", policy.kernel));
  }
  if (!backend_allows(policy.backend, kernel.family())) {
    return Verdict::reject(
        Reason::kBackendFilter,
        fmt::format("{} kernel, --linear-backend {}", family_name(kernel.family()),
                    linear_backend_name(policy.backend)));
  }
  return Verdict::accept();
}

std::string mode_label(const LinearProblem& problem) {
  if (problem.scheme == WeightScheme::kFp8 && problem.fp8_mode != Fp8Mode::kNone) {
    return fmt::format("FP8 mode {}", fp8_mode_name(problem.fp8_mode));
  }
  if (problem.scheme == WeightScheme::kInt && problem.int8_activations) {
    return "int activations a8";
  }
  return "";
}

namespace {

Selection evaluate(const std::vector<const LinearKernel*>& kernels, const LinearProblem& problem,
                   const Device& device, const SelectionPolicy& policy, std::string_view layer_name,
                   bool log) {
  Selection selection;
  selection.problem = problem;
  const Fp8ModeDecision mode = decide_fp8_mode(problem, device, policy, kernels);
  selection.problem.fp8_mode = mode.mode;
  selection.mode_reason = mode.reason;
  if (problem.scheme == WeightScheme::kInt) {
    if (problem.int8_activations) {
      selection.mode_reason = "int8 activations, given in the problem string";
    } else if (policy.int8_activations) {
      selection.problem.int8_activations = true;
      selection.mode_reason =
          "int8 activations (symmetric, per row and weight group), asked for with "
          "--int8-activations";
    }
  }

  const std::string problem_text = log ? selection.problem.to_string() : std::string();
  for (const LinearKernel* kernel : kernels) {
    Verdict verdict = policy_verdict(*kernel, policy);
    if (verdict.ok()) verdict = kernel->check(selection.problem, device);
    const bool chosen = verdict.ok() && selection.kernel == nullptr;
    if (chosen) selection.kernel = kernel;
    // Every line is a reproducer: `qlinear bench <problem>` parses the second field.
    if (log) {
      log_verbose("dispatch", "{} {} {} {}", layer_name, problem_text, kernel->name(),
                  verdict.ok() ? (chosen ? "accepted (chosen)" : "accepted (lower priority)")
                               : fmt::format("rejected ({})", verdict.to_string()));
    }
    selection.candidates.push_back({kernel, std::move(verdict)});
  }
  return selection;
}

}  // namespace

Selection evaluate_kernels(const std::vector<const LinearKernel*>& kernels,
                           const LinearProblem& problem, const Device& device,
                           const SelectionPolicy& policy, std::string_view layer_name) {
  return evaluate(kernels, problem, device, policy, layer_name, /*log=*/true);
}

Selection evaluate_kernels_quietly(const std::vector<const LinearKernel*>& kernels,
                                   const LinearProblem& problem, const Device& device,
                                   const SelectionPolicy& policy) {
  return evaluate(kernels, problem, device, policy, "", /*log=*/false);
}

Status no_kernel_error(const Selection& selection, const Device& device,
                       const SelectionPolicy& policy, std::string_view layer_name) {
  std::string message = fmt::format("layer \"{}\" ({}) on {}: no kernel accepts it", layer_name,
                                    selection.problem.to_string(), device.describe());
  if (!selection.mode_reason.empty()) {
    message += fmt::format(" ({}: {})", mode_label(selection.problem), selection.mode_reason);
  }
  if (selection.candidates.empty()) {
    message +=
        fmt::format("; no kernels are registered for platform {}", platform_name(device.platform));
  }
  if (!policy.kernel.empty()) {
    const bool listed =
        std::any_of(selection.candidates.begin(), selection.candidates.end(),
                    [&](const Candidate& c) { return c.kernel->name() == policy.kernel; });
    if (!listed) {
      message += fmt::format("; --kernel {} is not a candidate for platform {}", policy.kernel,
                             platform_name(device.platform));
    }
  }
  for (const Candidate& candidate : selection.candidates) {
    message += fmt::format("\n  {}: {}", candidate.kernel->name(), candidate.verdict.to_string());
    const std::string_view remedy = reason_remedy(candidate.verdict.reason);
    if (!remedy.empty()) message += fmt::format(" (remedy: {})", remedy);
  }
  return Status(ErrorCode::kNoKernel, std::move(message));
}

Result<Selection> select_from(const std::vector<const LinearKernel*>& kernels,
                              const LinearProblem& problem, const Device& device,
                              const SelectionPolicy& policy, std::string_view layer_name) {
  Selection selection = evaluate_kernels(kernels, problem, device, policy, layer_name);
  if (selection.kernel == nullptr) return no_kernel_error(selection, device, policy, layer_name);
  return selection;
}

Result<Selection> select_kernel(const LinearProblem& problem, const Device& device,
                                const SelectionPolicy& policy, std::string_view layer_name) {
  return select_from(kernels_for(device.platform), problem, device, policy, layer_name);
}

std::vector<BucketSelection> evaluate_buckets(const std::vector<const LinearKernel*>& kernels,
                                              const LinearProblem& problem, const Device& device,
                                              const SelectionPolicy& policy,
                                              std::string_view layer_name) {
  // The starts of the pieces: m_min and every breakpoint inside (m_min, m_max].
  std::vector<int64_t> starts = {problem.m_min};
  for (const LinearKernel* kernel : kernels) {
    for (int64_t m : kernel->m_breakpoints()) {
      if (m > problem.m_min && m <= problem.m_max) starts.push_back(m);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());

  auto range = [&](int64_t lo, int64_t hi) {
    LinearProblem p = problem;
    p.m_min = lo;
    p.m_max = hi;
    return p;
  };
  // Select per piece (quietly: dispatch lines are logged once per final bucket below).
  struct Piece {
    int64_t lo, hi;
    const LinearKernel* kernel;
  };
  std::vector<Piece> pieces;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const int64_t lo = starts[i];
    const int64_t hi = i + 1 < starts.size() ? starts[i + 1] - 1 : problem.m_max;
    const LinearKernel* chosen = nullptr;
    if (starts.size() > 1) {
      const Selection s = evaluate_kernels_quietly(kernels, range(lo, hi), device, policy);
      chosen = s.kernel;
    }
    if (!pieces.empty() && pieces.back().kernel == chosen && starts.size() > 1) {
      pieces.back().hi = hi;
    } else {
      pieces.push_back({lo, hi, chosen});
    }
  }
  std::vector<BucketSelection> buckets;
  for (const Piece& piece : pieces) {
    BucketSelection b;
    b.selection = evaluate_kernels(kernels, range(piece.lo, piece.hi), device, policy, layer_name);
    if (b.selection.kernel != nullptr) b.engines = b.selection.kernel->engines(b.selection.problem);
    buckets.push_back(std::move(b));
  }
  return buckets;
}

Result<std::vector<BucketSelection>> select_buckets(const LinearProblem& problem,
                                                    const Device& device,
                                                    const SelectionPolicy& policy,
                                                    std::string_view layer_name) {
  std::vector<BucketSelection> buckets =
      evaluate_buckets(kernels_for(device.platform), problem, device, policy, layer_name);
  for (const BucketSelection& b : buckets) {
    if (b.selection.kernel == nullptr) {
      return no_kernel_error(b.selection, device, policy, layer_name);
    }
  }
  return buckets;
}

}  // namespace qlinear
