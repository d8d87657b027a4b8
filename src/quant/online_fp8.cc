// Online FP8 (formats.md §3.3): an unquantized checkpoint quantized at load with per-channel
// weight scales and dynamic per-token activations. The LM head stays dense; `online_ignore`
// names (or "re:" regexes) are matched against unfused layer names.
#include "quant/formats.h"
#include "quant/skip_rules.h"

namespace qlinear::quant_internal {
namespace {

class OnlineFp8Config final : public QuantConfig {
 public:
  explicit OnlineFp8Config(std::vector<NamePattern> ignore) : ignore_(std::move(ignore)) {}

  QuantFormat format() const override { return QuantFormat::kOnlineFp8; }

  Result<QuantSpec> resolve(std::string_view layer) const override {
    if (is_lm_head(layer)) {
      return dense_spec(layer, format(), "LM head: online FP8 leaves it unquantized");
    }
    if (const NamePattern* entry = find_pattern(layer, ignore_)) {
      return dense_spec(layer, format(),
                        "in the online FP8 ignore list (" + entry->describe() + ")");
    }
    Fp8Spec spec;
    spec.weight = Fp8WeightGranularity::kChannel;
    spec.activation = ActQuant::kDynamicToken;
    spec.scale_name.clear();  // scales are computed at load, none is read
    spec.online = true;
    return fp8_quant_spec(layer, format(), spec);
  }

  std::string summary() const override {
    return fmt::format("online-fp8 channel dyn-token ignore={} entries", ignore_.size());
  }

 private:
  std::vector<NamePattern> ignore_;
};

}  // namespace

Result<std::unique_ptr<QuantConfig>> make_online_fp8_config(const QuantOptions& options) {
  QL_ASSIGN_OR_RETURN(auto ignore,
                      compile_name_patterns(options.online_ignore, "online FP8 ignore list"));
  return std::unique_ptr<QuantConfig>(std::make_unique<OnlineFp8Config>(std::move(ignore)));
}

}  // namespace qlinear::quant_internal
