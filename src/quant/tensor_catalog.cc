#include "quant/tensor_catalog.h"

#include "io/checkpoint.h"

namespace qlinear {

TensorCatalog TensorCatalog::from_checkpoint(const Checkpoint& checkpoint) {
  TensorCatalog catalog;
  for (const auto& name : checkpoint.tensor_names()) {
    if (auto ref = checkpoint.find(name)) catalog.add(name, ref->dtype());
  }
  return catalog;
}

std::optional<DType> TensorCatalog::dtype(std::string_view name) const {
  auto it = dtypes.find(name);
  if (it == dtypes.end()) return std::nullopt;
  return it->second;
}

bool TensorCatalog::knows_layer(std::string_view layer) const {
  const std::string prefix = std::string(layer) + ".";
  auto it = dtypes.lower_bound(prefix);
  return it != dtypes.end() && std::string_view(it->first).starts_with(prefix);
}

}  // namespace qlinear
