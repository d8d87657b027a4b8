#include "kernels/explain.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

#include "convert/convert.h"
#include "io/checkpoint.h"
#include "kernels/problem.h"
#include "kernels/registry.h"
#include "quant/layer_plan.h"
#include "shard/shard.h"

namespace qlinear {

ExplainRow explain_row(std::string_view name, const Selection& selection, const Device& device,
                       const SelectionPolicy& policy) {
  ExplainRow row;
  row.name = std::string(name);
  row.scheme = selection.problem.scheme_string();
  row.problem = selection.problem.to_string();
  row.mode = selection.problem.scheme == WeightScheme::kInt && selection.problem.int8_activations
                 ? "a8"
                 : std::string(fp8_mode_name(selection.problem.fp8_mode));
  row.mode_label = mode_label(selection.problem);
  row.mode_reason = selection.mode_reason;
  for (const Candidate& candidate : selection.candidates) {
    if (candidate.kernel == selection.kernel) continue;
    if (candidate.verdict.ok()) {
      row.also_accepted.emplace_back(candidate.kernel->name());
    } else {
      row.rejected.push_back(
          {std::string(candidate.kernel->name()), candidate.verdict.to_string()});
    }
  }
  if (selection.kernel != nullptr) {
    row.kernel = std::string(selection.kernel->name());
  } else {
    row.error = no_kernel_error(selection, device, policy, name).message();
  }
  return row;
}

Result<ExplainReport> explain_model(const Checkpoint& checkpoint, const Device& device,
                                    const SelectionPolicy& policy, const ExplainOptions& options) {
  if (options.tp < 1) {
    return make_error(ErrorCode::kInvalidArgument, "--tp {} must be at least 1", options.tp);
  }
  QL_ASSIGN_OR_RETURN(auto config, parse_quant_config(checkpoint, options.quant));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  const std::vector<const LinearKernel*> kernels = kernels_for(device.platform);

  ExplainReport report;
  report.device = device.describe();
  for (const LinearLayer& layer : layers) {
    QL_ASSIGN_OR_RETURN(Canonical weights, load_canonical(checkpoint, layer));
    if (options.tp > 1) {
      QL_ASSIGN_OR_RETURN(
          weights, shard_canonical(weights, parallel_kind_for(layer.name), options.tp, /*rank=*/0));
    }
    LinearProblem problem = LinearProblem::from_canonical(weights, options.tp);
    problem.act_dtype = options.act_dtype;
    const Selection selection = evaluate_kernels(kernels, problem, device, policy, layer.name);
    report.layers.push_back(explain_row(layer.name, selection, device, policy));
  }
  return report;
}

std::string ExplainReport::to_json() const {
  nlohmann::json layers_json = nlohmann::json::array();
  for (const ExplainRow& row : layers) {
    nlohmann::json rejected = nlohmann::json::array();
    for (const ExplainRejection& r : row.rejected) {
      rejected.push_back({{"kernel", r.kernel}, {"reason", r.reason}});
    }
    nlohmann::json entry = {{"name", row.name},
                            {"scheme", row.scheme},
                            {"problem", row.problem},
                            {"kernel", row.kernel},
                            {"mode", row.mode},
                            {"mode_reason", row.mode_reason},
                            {"rejected", std::move(rejected)},
                            {"also_accepted", row.also_accepted}};
    if (!row.error.empty()) entry["error"] = row.error;
    layers_json.push_back(std::move(entry));
  }
  const nlohmann::json doc = {{"device", device}, {"layers", std::move(layers_json)}};
  return doc.dump(2);
}

}  // namespace qlinear
