// libFuzzer target for one quantization-config parser: built once per format with
// QL_FUZZ_QUANT_METHOD set ("awq", "gptq", "auto-round", "compressed-tensors", "fp8"), which
// overrides the input's quant_method so that parser sees every input; "" keeps the input's own
// (legacy key detection included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_quant_common.h"
#include "io/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto qc = qlinear::io_internal::parse_ordered_json_text(
      text, "quantize_config.json", qlinear::io_internal::DuplicateKeys::kAllow);
  if (!qc.ok()) return 0;
  qlinear_fuzz::exercise_quant_config(*qc, QL_FUZZ_QUANT_METHOD);
  return 0;
}
