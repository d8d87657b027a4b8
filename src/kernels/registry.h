// The ordered per-backend kernel lists. Each kernel file defines
//   const LinearKernel& kernel_<id>();   (namespace qlinear)
// and its backend's list.cc names it with one line `X(<id>)`, in priority order (an X-macro:
// adding a kernel touches the kernel file, that one line, and maybe one new Reason).
// Backends that are not compiled still list their kernels; on a real device those answer
// Reason::kNotCompiled, on a simulated one (--target) they check their true requirements so
// `explain` shows what would run there (prepare() still refuses).
#pragma once

#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace qlinear {

std::vector<const LinearKernel*> cpu_kernels();
std::vector<const LinearKernel*> cuda_kernels();
std::vector<const LinearKernel*> opencl_kernels();
std::vector<const LinearKernel*> reference_kernels();  // appended to every platform's list

// The candidates for `platform` in priority order (the backend's list, then reference).
std::vector<const LinearKernel*> kernels_for(Platform platform);
// Every registered kernel of every backend, each once.
std::vector<const LinearKernel*> all_kernels();
const LinearKernel* find_kernel(std::string_view name);

}  // namespace qlinear
