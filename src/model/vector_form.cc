#include "model/vector_form.h"

#include "kernels/cpu_features.h"

namespace qlinear {

std::string_view vector_form_name(VectorForm form) {
  switch (form) {
    case VectorForm::kAvx512:
      return "avx512";
    case VectorForm::kAvx2:
      return "avx2";
    case VectorForm::kPortable:
      break;
  }
  return "portable";
}

bool cpu_runs(VectorForm form) {
  if (form == VectorForm::kPortable) return true;
#if defined(__x86_64__)
  static const CpuFeatures f = detect_cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (form == VectorForm::kAvx2) return avx2;
  return avx2 && f.avx512f && f.avx512bw && f.avx512vl;
#else
  return false;
#endif
}

VectorForm best_vector_form() {
  static const VectorForm best = cpu_runs(VectorForm::kAvx512) ? VectorForm::kAvx512
                                 : cpu_runs(VectorForm::kAvx2) ? VectorForm::kAvx2
                                                               : VectorForm::kPortable;
  return best;
}

}  // namespace qlinear
