// qlinear::Model (qlinear/model.h): the library-level view of a checkpoint folder, over io/,
// quant/, convert/, shard/ and kernels/.
#include "qlinear/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <utility>

#include "convert/convert.h"
#include "io/checkpoint.h"
#include "kernels/explain.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"
#include "shard/shard.h"

namespace qlinear {

struct Model::Impl {
  Checkpoint checkpoint;
  QuantOptions quant;
  std::unique_ptr<QuantConfig> config;
  std::vector<LinearLayer> layers;
  std::vector<LinearLayerInfo> infos;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Result<Model> Model::open(const std::string& dir, const ModelOptions& options) {
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(dir));
  QuantOptions quant;
  quant.quantization = options.quantization;
  QL_ASSIGN_OR_RETURN(std::unique_ptr<QuantConfig> config, parse_quant_config(checkpoint, quant));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  auto impl = std::unique_ptr<Impl>(
      new Impl{std::move(checkpoint), quant, std::move(config), std::move(layers), {}});
  for (const LinearLayer& layer : impl->layers) {
    impl->infos.push_back({layer.name, layer.shards,
                           layer.specs.empty() ? std::string() : layer.specs.front().describe()});
  }
  return Model(std::move(impl));
}

const std::string& Model::dir() const { return impl_->checkpoint.dir(); }

const std::vector<LinearLayerInfo>& Model::linear_layers() const { return impl_->infos; }

Result<ExplainReport> Model::explain(const Device& device, const SelectionPolicy& policy,
                                     const ExplainOptions& options) const {
  return explain_model(impl_->checkpoint, device, policy, options, impl_->quant);
}

Result<Linear> Model::load_linear(std::string_view name, const Device& device,
                                  const LinearOptions& options, int rank) const {
  const LinearLayer* found = nullptr;
  for (const LinearLayer& layer : impl_->layers) {
    if (layer.name == name) found = &layer;
    for (const std::string& shard : layer.shards) {
      if (shard == name) found = &layer;
    }
    if (found != nullptr) break;
  }
  if (found == nullptr) {
    return make_error(ErrorCode::kNotFound, "{}: no linear layer \"{}\" ({} linear layers)",
                      impl_->checkpoint.dir(), name, impl_->layers.size());
  }
  if (options.tp < 1 || rank < 0 || rank >= options.tp) {
    return make_error(ErrorCode::kInvalidArgument, "layer \"{}\": rank {} of tp {} is invalid",
                      name, rank, options.tp);
  }
  QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(impl_->checkpoint, *found));
  // An unfused layer's shards run alone: the name picks one (a fused name then has no part).
  Canonical* part = nullptr;
  for (Canonical& c : loaded.parts) {
    if (loaded.parts.size() == 1 || c.name == name) part = &c;
  }
  if (part == nullptr) {
    return make_error(ErrorCode::kNotFound, "layer \"{}\" {}; load one of its shards ({})", name,
                      loaded.unfused_reason, fmt::join(found->shards, ", "));
  }
  Canonical weights = std::move(*part);
  const std::string layer_name = weights.name;
  if (options.tp > 1) {
    QL_ASSIGN_OR_RETURN(weights,
                        shard_canonical(weights, parallel_kind_for(layer_name), options.tp, rank));
  }
  return Linear::create(weights, device, options, layer_name);
}

}  // namespace qlinear
