// The kernel contract (docs/architecture.md "Devices and kernels"). One LinearKernel object per
// registry entry; prepare() repacks canonical weights into the kernel's own immutable layout.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "convert/canonical.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/device.h"
#include "kernels/problem.h"
#include "kernels/reasons.h"

namespace qlinear {

enum class Family { kNative, kBlas, kReference };
std::string_view family_name(Family family);

// Execution context for run(): CPU thread count today, device streams later.
struct Stream {
  int threads = 0;  // 0: all cores
};

class PreparedLinear {
 public:
  virtual ~PreparedLinear() = default;
  // x: [M, K] f32, bf16 or f16 (contiguous); y: [M, N] f32 (contiguous). y = x * W^T + bias.
  virtual Status run(const TensorView& x, const TensorView& y, Stream& stream) const = 0;
};

class LinearKernel {
 public:
  virtual ~LinearKernel() = default;
  virtual std::string_view name() const = 0;  // "<backend>.<scheme>.<algo>.<isa>"
  virtual Family family() const = 0;
  virtual Platform platform() const = 0;
  // A flat list of requirements; the first unmet one is the verdict (a catalogue reason plus
  // the offending values).
  virtual Verdict check(const LinearProblem& problem, const Device& device) const = 0;
  // Only called after check() accepted `problem` (from_canonical(weights) + the chosen mode).
  virtual Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                          const LinearProblem& problem,
                                                          const Device& device) const = 0;
};

}  // namespace qlinear
