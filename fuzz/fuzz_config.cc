// libFuzzer target: config.json text through what Checkpoint::open and validate_model read from
// it: the ordered parse, the model family and sizes, and the quantization config found under
// "quantization_config" / "compression_config" with format auto-detection.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_quant_common.h"
#include "io/json_text.h"
#include "quant/model_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = qlinear::io_internal::parse_ordered_json_text(
      text, "config.json", qlinear::io_internal::DuplicateKeys::kAllow);
  if (!config.ok() || !config->is_object()) return 0;
  const nlohmann::json plain(*config);
  auto layout = qlinear::read_model_layout(plain, "config.json");
  if (layout.ok() && layout->dims) {
    const auto& d = *layout->dims;
    if (d.hidden_size <= 0 || d.num_heads <= 0 || d.num_kv_heads <= 0 || d.head_dim <= 0 ||
        d.num_heads % d.num_kv_heads != 0) {
      __builtin_trap();  // read_model_layout promised positive, consistent sizes
    }
  }
  for (const char* key : {"quantization_config", "compression_config"}) {
    const auto it = config->find(key);
    if (it != config->end() && !it->is_null()) {
      qlinear_fuzz::exercise_quant_config(*it, "");
      break;
    }
  }
  return 0;
}
