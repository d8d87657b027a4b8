// The reasons catalogue. docs/reasons.md mirrors this table (tests/unit/kernels/reasons_test.cc
// checks that they agree), so edit both together.
#include "kernels/reasons.h"

#include <string>

namespace qlinear {
namespace {

struct ReasonInfo {
  std::string_view code;
  std::string_view description;
  std::string_view remedy;
};

ReasonInfo info(Reason reason) {
  switch (reason) {
    case Reason::kAccepted:
      return {"accepted", "The kernel accepts the problem.", ""};
    case Reason::kNotCompiled:
      return {"not-compiled", "The backend or ISA variant was not built into this binary.",
              "Rebuild with the backend enabled (cmake --preset cuda or --preset opencl), or pick "
              "another kernel."};
    case Reason::kWrongPlatform:
      return {"wrong-platform", "The kernel runs on another platform than the device.",
              "Choose a device of the kernel's platform with --device or --target."};
    case Reason::kMissingIsa:
      return {"missing-isa", "The CPU lacks an instruction set the kernel needs.",
              "Run on a CPU with that instruction set, or let another kernel run the layer."};
    case Reason::kCapability:
      return {"capability", "The GPU's compute capability or a device feature is too low.",
              "Run on a newer GPU, or let another kernel run the layer."};
    case Reason::kScheme:
      return {"scheme", "The kernel does not handle this weight scheme (int, fp8 or dense).", ""};
    case Reason::kBits:
      return {"bits", "The kernel does not handle this weight bit width.", ""};
    case Reason::kGroupSize:
      return {"group-size", "The kernel does not handle this quantization group size.",
              "Re-quantize with a group size the kernel supports (often 128), or use another "
              "kernel."};
    case Reason::kAlignment:
      return {"alignment", "K or N is not a multiple of the kernel's tile.",
              "Use a tensor-parallel size that keeps the per-rank K and N aligned, or another "
              "kernel."};
    case Reason::kActOrder:
      return {"act-order", "The kernel does not handle act-order (g_idx) weights.",
              "Use a checkpoint quantized without act-order (desc_act=false), or another kernel."};
    case Reason::kZeroPoints:
      return {"zero-points", "The kernel does not handle asymmetric zero points.",
              "Use a symmetric checkpoint, or another kernel."};
    case Reason::kFp8Granularity:
      return {"fp8-granularity",
              "The kernel does not handle this FP8 weight scale granularity or block shape.", ""};
    case Reason::kFp8Mode:
      return {"fp8-mode", "The kernel runs the other FP8 mode (W8A8 vs W8A16).",
              "Change the FP8 mode with --linear-backend (see qlinear explain for why this mode "
              "was chosen)."};
    case Reason::kActivationQuant:
      return {"activation-quant", "The kernel does not handle this activation quantization.", ""};
    case Reason::kDtype:
      return {"dtype", "The kernel does not handle the activation, output or weight dtype.",
              "Run with an activation dtype the kernel supports (--dtype)."};
    case Reason::kMRange:
      return {"m-range",
              "The kernel runs another range of M (rows of x); another kernel takes this one.", ""};
    case Reason::kDisabledByUser:
      return {"disabled-by-user", "The kernel is named in QLINEAR_DISABLED_KERNELS.",
              "Remove it from QLINEAR_DISABLED_KERNELS."};
    case Reason::kBackendFilter:
      return {"backend-filter", "The kernel's family is excluded by --linear-backend.",
              "Use --linear-backend auto."};
    case Reason::kNotRequested:
      return {"not-requested", "--kernel named another kernel.", "Drop --kernel."};
    case Reason::kSimulated:
      return {"simulated", "The device is simulated: the kernel can be chosen but cannot run.",
              "Run on a real device (drop --target)."};
  }
  return {"unknown", "Unknown reason.", ""};
}

}  // namespace

std::string_view reason_code(Reason reason) { return info(reason).code; }
std::string_view reason_description(Reason reason) { return info(reason).description; }
std::string_view reason_remedy(Reason reason) { return info(reason).remedy; }

std::string Verdict::to_string() const {
  std::string text(reason_code(reason));
  if (!detail.empty()) text += ": " + detail;
  return text;
}

}  // namespace qlinear
