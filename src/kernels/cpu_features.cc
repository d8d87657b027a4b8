// CPU feature detection. cpuid bit positions: Intel SDM vol. 2A, "CPUID" (leaf 1 ECX; leaf 7
// subleaf 0 EBX/ECX/EDX; leaf 7 subleaf 1 EAX). XCR0 bits: SDM vol. 1 §13.1.
#include "kernels/cpu_features.h"

#include <sched.h>

#include <fstream>
#include <string>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace qlinear {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned value, int index) { return ((value >> index) & 1u) != 0; }

// XCR0: which register states the OS saves on context switch. Read with xgetbv, which is only
// legal when cpuid reports OSXSAVE.
unsigned long long read_xcr0() {
  unsigned eax = 0;
  unsigned edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

// Linux gives a process AMX's tile data state only when it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, kernel 5.16+; Documentation/arch/x86/xstate.rst);
// without it the first tile instruction faults. Granted to the whole process, once: true when
// AMX may be used.
bool amx_permitted() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool granted = [] {
    constexpr long kReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}
#endif

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures features;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return features;
  const bool osxsave = bit(ecx, 27);
  const bool has_avx = bit(ecx, 28);
  const bool has_fma = bit(ecx, 12);
  const bool has_f16c = bit(ecx, 29);
  const unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;                 // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;         // XTILECFG and XTILEDATA

  features.fma = has_avx && os_avx && has_fma;
  features.f16c = has_avx && os_avx && has_f16c;

  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return features;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  features.avx2 = os_avx && bit(ebx, 5);
  features.avx512f = os_avx512 && bit(ebx, 16);
  features.avx512bw = os_avx512 && bit(ebx, 30);
  features.avx512vl = os_avx512 && bit(ebx, 31);
  features.avx512_vnni = os_avx512 && bit(ecx, 11);
  // AMX: tile architecture (EDX 24) plus bf16 tiles (EDX 22), the part qlinear would use.
  features.amx = os_amx && bit(edx, 24) && bit(edx, 22) && amx_permitted();
  const unsigned max_subleaf = eax;
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    features.avx512_bf16 = os_avx512 && bit(eax, 5);
  }
#endif
  return features;
}

int detect_cpu_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

std::string detect_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return {};
}

}  // namespace qlinear
