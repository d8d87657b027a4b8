// The kernel contract (docs/architecture.md "Devices and kernels"). One LinearKernel object per
// registry entry; prepare() repacks canonical weights into the kernel's own immutable layout on
// the device; PreparedLinear::run() validates a call once and hands it to the kernel's do_run().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical.h"
#include "core/status.h"
#include "kernels/device_context.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"
#include "qlinear/device.h"
#include "qlinear/linear.h"
#include "qlinear/view.h"

namespace qlinear {

enum class Family { kNative, kBlas, kReference };
std::string_view family_name(Family family);

// A kernel's algorithm over a range of M (the CPU int kernels decode inline for small M and
// through L1 panels above a threshold); `name` "" when the kernel has one algorithm.
struct Engine {
  int64_t m_min = 1;
  int64_t m_max = 1;
  std::string name;
};

class PreparedLinear {
 public:
  // `problem` is what check() accepted (shapes, dtypes, M range); `location` where the prepared
  // weights live, and so where x, y and the workspace must be.
  PreparedLinear(const LinearProblem& problem, Location location)
      : problem_(problem), location_(location) {}
  virtual ~PreparedLinear() = default;
  PreparedLinear(const PreparedLinear&) = delete;
  PreparedLinear& operator=(const PreparedLinear&) = delete;

  // y [M, N] = x [M, K] W^T + bias. Checks, before the kernel runs: x is [M, K] of the problem's
  // activation dtype, y [M, N] of its output dtype, both in location() with ld >= cols and
  // non-null data; M inside the problem's M range (M = 0 does nothing); the workspace holds
  // workspace_bytes(M) bytes in location(). Never allocates or synchronises.
  Status run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const;
  // The same with fused work (qlinear/linear.h LinearFusion): run()'s checks, then the fusion's
  // views against the problem (and x's rows), then do_run_fused(). Parts this kernel cannot do
  // at M (fusion_support) are kUnsupported errors.
  Status run(ConstMatrixView x, MatrixView y, ExecContext& ctx, const LinearFusion& fusion) const;
  // What do_run_fused() can do at m rows (nothing by default).
  virtual FusionSupport fusion_support(int64_t m) const {
    (void)m;
    return {};
  }

  // Scratch bytes a run of up to m rows needs (0 by default).
  virtual std::size_t workspace_bytes(int64_t m) const {
    (void)m;
    return 0;
  }
  // run() can be captured in a CUDA graph (device kernels only; host code cannot).
  virtual bool capturable() const { return false; }

  const LinearProblem& problem() const { return problem_; }
  Location location() const { return location_; }

 protected:
  virtual Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const = 0;
  // Only called with parts fusion_support() allows, their views checked.
  virtual Status do_run_fused(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                              const LinearFusion& fusion) const;

 private:
  // run()'s checks of x, y, M and the workspace.
  Status check_call(ConstMatrixView x, MatrixView y, ExecContext& ctx) const;

  LinearProblem problem_;
  Location location_;
};

class LinearKernel {
 public:
  virtual ~LinearKernel() = default;
  virtual std::string_view name() const = 0;  // "<backend>.<scheme>.<algo>.<isa>"
  virtual Family family() const = 0;
  virtual Platform platform() const = 0;
  // A flat list of requirements; the first unmet one is the verdict (a catalogue reason plus
  // the offending values). The problem's M range is part of it.
  virtual Verdict check(const LinearProblem& problem, const Device& device) const = 0;
  // The values of M at which check() may change its answer (each the first M of a new range),
  // so selection can cut a layer's M range into buckets. Empty: check() ignores M.
  virtual std::vector<int64_t> m_breakpoints() const { return {}; }
  // The kernel's algorithms over the problem's M range, in order, covering it exactly.
  virtual std::vector<Engine> engines(const LinearProblem& problem) const {
    return {{problem.m_min, problem.m_max, ""}};
  }
  // Only called after check() accepted `problem` (from_canonical(weights) + the chosen mode and
  // M range), on a real device of the kernel's platform.
  virtual Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                          const LinearProblem& problem,
                                                          DeviceContext& device) const = 0;
};

}  // namespace qlinear
