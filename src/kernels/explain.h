// `qlinear explain` as a library function: for every linear layer of a checkpoint, the problem,
// the kernel selection would pick on a device (detected or simulated), the FP8 mode and why,
// and every rejected candidate with its reason.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/select.h"
#include "qlinear/device.h"
#include "qlinear/dtype.h"
#include "qlinear/explain.h"
#include "quant/quant_spec.h"

namespace qlinear {

class Checkpoint;

// Plans the checkpoint's linear layers, converts each to canonical form (rank 0's view under
// tp), and selects a kernel for it. A layer no kernel accepts is a row with an error, not a
// failure; checkpoint, conversion and sharding errors are returned.
Result<ExplainReport> explain_model(const Checkpoint& checkpoint, const Device& device,
                                    const SelectionPolicy& policy, const ExplainOptions& options,
                                    const QuantOptions& quant = {});

// One row from already evaluated buckets of a layer; explain_model and `qlinear layer` share it.
ExplainRow explain_row(std::string_view name, const std::vector<BucketSelection>& buckets,
                       const Device& device, const SelectionPolicy& policy);

}  // namespace qlinear
