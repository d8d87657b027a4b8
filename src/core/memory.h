// Large-buffer allocation for streamed weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace qlinear {

// 64-byte aligned memory, released with std::free. Buffers of 4 MiB or more are 2 MiB aligned
// and ask for transparent huge pages (madvise, before the first touch): streaming hundreds of MB
// of prepared weights through 4 KiB pages costs a TLB walk per page and stops the hardware
// prefetcher at every page boundary (measured: one Zen 4 core 14.6 -> 23.9 GB/s). The advice is
// only advice: without THP the buffer is still valid. Returns nullptr when out of memory.
void* allocate_streamed(std::size_t bytes);

// A std::vector allocator over allocate_streamed: prepared weight panels and the benchmark's
// yardstick buffers.
template <class T>
struct StreamedAllocator {
  using value_type = T;
  StreamedAllocator() = default;
  template <class U>
  explicit StreamedAllocator(const StreamedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    void* p = allocate_streamed(n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  bool operator==(const StreamedAllocator&) const { return true; }
  bool operator!=(const StreamedAllocator&) const { return false; }
};

template <class T>
using StreamedVector = std::vector<T, StreamedAllocator<T>>;

// The most memory this process has had resident so far (getrusage's ru_maxrss), in bytes; 0
// where the system does not say. generate and bench-model report it (docs/runner.md "Memory").
uint64_t peak_resident_bytes();

}  // namespace qlinear
