// libFuzzer target: model.safetensors.index.json text. Every shard name it accepts must be a
// relative name that stays inside the model folder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/model_files.h"
#include "io/shard_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = qlinear::parse_shard_index(text, "fuzz.index.json");
  if (!index.ok()) return 0;
  for (const auto& [tensor, shard] : index->shard_of) {
    if (!qlinear::check_relative_name(shard, "fuzz").ok()) __builtin_trap();
    if (index->first_tensor.count(shard) == 0) __builtin_trap();
  }
  if (index->shard_of.empty()) __builtin_trap();  // an empty weight_map is an error
  return 0;
}
