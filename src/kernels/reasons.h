// The one catalogue of reasons a kernel rejects a problem. docs/reasons.md lists them (a test
// checks that the document and this enum agree).
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace qlinear {

enum class Reason {
  kAccepted,
  kNotCompiled,      // the backend or ISA variant was not built into this binary
  kWrongPlatform,    // kernel for another platform than the device's
  kMissingIsa,       // CPU lacks an instruction set (avx2, avx512_vnni, ...)
  kCapability,       // GPU compute capability / feature too low
  kScheme,           // weight scheme not handled (int vs fp8 vs dense)
  kBits,             // bit width not handled
  kGroupSize,        // group size not handled
  kAlignment,        // K or N not a multiple of what the kernel tiles
  kActOrder,         // act-order (g_idx) not handled
  kZeroPoints,       // asymmetric zero points not handled
  kFp8Granularity,   // FP8 weight scale granularity or block shape not handled
  kFp8Mode,          // kernel runs the other FP8 mode (W8A8 vs W8A16)
  kActivationQuant,  // activation quantization kind not handled
  kDtype,            // activation / output / dense weight dtype not handled
  kMRange,           // the kernel runs another range of M (rows of x)
  kDisabledByUser,   // named in QLINEAR_DISABLED_KERNELS
  kBackendFilter,    // excluded by --linear-backend
  kNotRequested,     // --kernel named another kernel
  kSimulated,        // device is simulated: can be chosen, cannot run
};

std::string_view reason_code(Reason reason);         // "not-compiled", "missing-isa", ...
std::string_view reason_description(Reason reason);  // one sentence for docs and errors
std::string_view reason_remedy(Reason reason);       // what a user can do, or ""

struct Verdict {
  Reason reason = Reason::kAccepted;
  std::string detail;  // offending values: "K=4100 not a multiple of 64"
  bool ok() const { return reason == Reason::kAccepted; }
  static Verdict accept() { return {}; }
  static Verdict reject(Reason reason, std::string detail) { return {reason, std::move(detail)}; }
  std::string to_string() const;  // "missing-isa: needs avx512_vnni"
};

}  // namespace qlinear
