// libFuzzer target: a whole safetensors file (length prefix, JSON header, data) through the
// reader that model folders use, from a memfd so the mmap path runs as in production.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return 0;
    }
    done += static_cast<size_t>(n);
  }
  const qlinear::ReadFile file(fd, size, "fuzz.safetensors");  // closes fd
  auto opened = qlinear::SafetensorsFile::open(file);
  if (!opened.ok()) return 0;
  // Touch every tensor's bytes: the reader promised they are inside the mapping.
  uint64_t sum = 0;
  for (const qlinear::TensorInfo& info : (*opened)->tensors()) {
    const auto bytes = (*opened)->data(info);
    if (!bytes.empty())
      sum += static_cast<uint8_t>(bytes.front()) + static_cast<uint8_t>(bytes.back());
    if ((*opened)->find(info.name) != &info) __builtin_trap();
  }
  __asm__ volatile("" : : "r"(sum));  // keep the reads
  return 0;
}
