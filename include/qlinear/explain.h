// What `qlinear explain` reports: for every linear layer of a checkpoint, the kernel that runs
// each range of M on a device (detected or simulated), the FP8 / int8-activation mode and why,
// and why every other candidate was not used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qlinear/dtype.h"

namespace qlinear {

struct ExplainOptions {
  int tp = 1;                      // --tp: layers are explained as rank 0's view
  DType act_dtype = DType::kBF16;  // activations as the runner feeds them
  DType out_dtype = DType::kF32;   // outputs as the runner asks for them
  int64_t max_rows = 4096;         // the M range explained: 1 .. max_rows
};

struct ExplainRejection {
  std::string kernel;
  std::string reason;  // Verdict::to_string(): "missing-isa: needs avx512_vnni"
};

// One range of M and what runs it: a kernel, and its engine (algorithm) in that range.
struct ExplainBucket {
  int64_t m_min = 1;
  int64_t m_max = 1;
  std::string kernel;   // "" when no kernel accepts this range
  std::string engine;   // "" when the kernel has one algorithm
  std::string problem;  // the range's problem string (a `qlinear bench` reproducer)
};

// The selection of one range of M where the candidates' verdicts are the same throughout.
struct ExplainSelection {
  int64_t m_min = 1;
  int64_t m_max = 1;
  std::string kernel;
  std::string mode;
  std::string mode_label;
  std::string mode_reason;
  std::vector<ExplainRejection> rejected;
  std::vector<std::string> also_accepted;
  std::string error;
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
  std::string note;  // why this shard runs unfused (fusion is an optimisation), or ""
  // Every range of M with its kernel and engine, in order (one when nothing switches), and the
  // selection of each range of kernels (the fields above are those of the first, M = 1).
  std::vector<ExplainBucket> buckets;
  std::vector<ExplainSelection> selections;
};

struct ExplainReport {
  std::string device;  // Device::describe()
  std::vector<ExplainRow> layers;

  // {"device": ..., "layers": [{"name", "scheme", "kernel", "mode", "rejected": [{"kernel",
  // "reason"}], ...}]}
  std::string to_json() const;
};

}  // namespace qlinear
