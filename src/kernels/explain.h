// `qlinear explain` as a library function: for every linear layer of a checkpoint, the problem,
// the kernel selection would pick on a device (detected or simulated), the FP8 mode and why,
// and every rejected candidate with its reason.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/device.h"
#include "kernels/select.h"
#include "quant/quant_spec.h"

namespace qlinear {

class Checkpoint;

struct ExplainOptions {
  int tp = 1;                      // --tp: layers are explained as rank 0's view
  DType act_dtype = DType::kBF16;  // activations as the runner feeds them
  QuantOptions quant;              // --quantization fp8 etc.
};

struct ExplainRejection {
  std::string kernel;
  std::string reason;  // Verdict::to_string(): "missing-isa: needs avx512_vnni"
};

struct ExplainRow {
  std::string name;         // fused layer name
  std::string scheme;       // LinearProblem::scheme_string()
  std::string problem;      // LinearProblem::to_string() (a `qlinear bench` reproducer)
  std::string kernel;       // chosen kernel, "" when none fits
  std::string mode;         // "w8a8" / "w8a16" (FP8), "a8" (int with int8 activations) / "none"
  std::string mode_label;   // "FP8 mode w8a8" / "int activations a8" / ""
  std::string mode_reason;  // "" when there is no mode to decide
  std::vector<ExplainRejection> rejected;  // candidates that rejected, in priority order
  std::vector<std::string> also_accepted;  // accepted, but a higher-priority kernel won
  std::string error;                       // the no-kernel error when `kernel` is ""
};

struct ExplainReport {
  std::string device;  // Device::describe()
  std::vector<ExplainRow> layers;

  // {"device": ..., "layers": [{"name", "scheme", "kernel", "mode", "rejected": [{"kernel",
  // "reason"}], ...}]}
  std::string to_json() const;
};

// Plans the checkpoint's linear layers, converts each to canonical form (rank 0's view under
// tp), and selects a kernel for it. A layer no kernel accepts is a row with an error, not a
// failure; checkpoint, conversion and sharding errors are returned.
Result<ExplainReport> explain_model(const Checkpoint& checkpoint, const Device& device,
                                    const SelectionPolicy& policy, const ExplainOptions& options);

// One row from an already selected (or not) layer; explain_model and `qlinear layer` share it.
ExplainRow explain_row(std::string_view name, const Selection& selection, const Device& device,
                       const SelectionPolicy& policy);

}  // namespace qlinear
