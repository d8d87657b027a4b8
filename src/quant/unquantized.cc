// A checkpoint without a quantization config: every layer is dense.
#include "quant/formats.h"

namespace qlinear::quant_internal {
namespace {

class UnquantizedConfig final : public QuantConfig {
 public:
  QuantFormat format() const override { return QuantFormat::kUnquantized; }
  Result<QuantSpec> resolve(std::string_view layer) const override {
    return dense_spec(layer, format(), "checkpoint is not quantized");
  }
  std::string summary() const override { return "unquantized"; }
};

}  // namespace

std::unique_ptr<QuantConfig> make_unquantized_config() {
  return std::make_unique<UnquantizedConfig>();
}

}  // namespace qlinear::quant_internal
