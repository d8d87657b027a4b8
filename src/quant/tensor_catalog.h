// The names and dtypes of a checkpoint's tensors: what the format parsers need for
// auto-detection (AWQ "not converted" layers, GPTQ without modules_in_block_to_quantize, an
// fp8 or quantized LM head). A plain struct so parsers can be tested without files.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "qlinear/dtype.h"

namespace qlinear {

class Checkpoint;

struct TensorCatalog {
  std::map<std::string, DType, std::less<>> dtypes;  // tensor name -> dtype

  static TensorCatalog from_checkpoint(const Checkpoint& checkpoint);

  void add(std::string name, DType dtype) { dtypes[std::move(name)] = dtype; }
  bool has(std::string_view name) const { return dtypes.find(name) != dtypes.end(); }
  std::optional<DType> dtype(std::string_view name) const;
  // True when some tensor is named "<layer>.<something>": the catalog can speak for the layer.
  bool knows_layer(std::string_view layer) const;
};

}  // namespace qlinear
