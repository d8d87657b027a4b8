// The SIMD form the CPU decoder's non-linear operations run in (attention tile steps, RMSNorm
// rows, SiLU * mul): AVX-512 where the CPU has F/BW/VL with FMA and F16C, else AVX2 with FMA and
// F16C, else portable C++. The library is built for baseline x86-64, so the vector forms are
// functions with target attributes, picked at run time.
#pragma once

#include <string_view>

namespace qlinear {

enum class VectorForm { kPortable, kAvx2, kAvx512 };

std::string_view vector_form_name(VectorForm form);
// Whether this CPU runs `form` (kPortable: always; the x86 forms only on x86-64).
bool cpu_runs(VectorForm form);
// The fastest form this CPU runs (detected once).
VectorForm best_vector_form();

}  // namespace qlinear
