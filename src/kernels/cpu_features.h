// Instruction-set detection for the CPU this process runs on (cpuid + xgetbv on x86).
#pragma once

#include <string>

#include "qlinear/device.h"

namespace qlinear {

// What this CPU can execute: a feature counts only when the CPU has it AND the OS saves its
// register state (XCR0), the same rule as __builtin_cpu_supports. All false off x86.
CpuFeatures detect_cpu_features();
// Cores this process may run on (its affinity mask), at least 1.
int detect_cpu_cores();
// "AMD EPYC 9654" from /proc/cpuinfo, or "" when unavailable.
std::string detect_cpu_model();

}  // namespace qlinear
