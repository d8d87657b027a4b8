#include "core/memory.h"

#include <sys/resource.h>

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qlinear {

void* allocate_streamed(std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (bytes < 2 * kHuge) {
    const std::size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded);
  }
  const std::size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

uint64_t peak_resident_bytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss <= 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace qlinear
