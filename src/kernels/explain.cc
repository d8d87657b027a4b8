#include "kernels/explain.h"

#include <fmt/format.h>

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

namespace {

ExplainSelection explain_selection(std::string_view name, const Selection& selection,
                                   const Device& device, const SelectionPolicy& policy) {
  ExplainSelection out;
  out.m_min = selection.problem.m_min;
  out.m_max = selection.problem.m_max;
  out.mode = selection.problem.scheme == WeightScheme::kInt && selection.problem.int8_activations
                 ? "a8"
                 : std::string(fp8_mode_name(selection.problem.fp8_mode));
  out.mode_label = mode_label(selection.problem);
  out.mode_reason = selection.mode_reason;
  for (const Candidate& candidate : selection.candidates) {
    if (candidate.kernel == selection.kernel) continue;
    if (candidate.verdict.ok()) {
      out.also_accepted.emplace_back(candidate.kernel->name());
    } else {
      out.rejected.push_back(
          {std::string(candidate.kernel->name()), candidate.verdict.to_string()});
    }
  }
  if (selection.kernel != nullptr) {
    out.kernel = std::string(selection.kernel->name());
  } else {
    out.error = no_kernel_error(selection, device, policy, name).message();
  }
  return out;
}

}  // namespace

ExplainRow explain_row(std::string_view name, const std::vector<BucketSelection>& buckets,
                       const Device& device, const SelectionPolicy& policy) {
  ExplainRow row;
  row.name = std::string(name);
  for (const BucketSelection& b : buckets) {
    const Selection& s = b.selection;
    row.selections.push_back(explain_selection(name, s, device, policy));
    if (s.kernel == nullptr) {
      row.buckets.push_back({s.problem.m_min, s.problem.m_max, "", "", s.problem.to_string()});
      continue;
    }
    for (const Engine& engine : b.engines) {
      LinearProblem p = s.problem;
      p.m_min = engine.m_min;
      p.m_max = engine.m_max;
      row.buckets.push_back(
          {engine.m_min, engine.m_max, std::string(s.kernel->name()), engine.name, p.to_string()});
    }
  }
  const Selection& first = buckets.front().selection;
  row.scheme = first.problem.scheme_string();
  LinearProblem whole = first.problem;
  whole.m_max = buckets.back().selection.problem.m_max;
  row.problem = whole.to_string();
  const ExplainSelection& s = row.selections.front();
  row.kernel = s.kernel;
  row.mode = s.mode;
  row.mode_label = s.mode_label;
  row.mode_reason = s.mode_reason;
  row.rejected = s.rejected;
  row.also_accepted = s.also_accepted;
  for (const ExplainSelection& e : row.selections) {
    if (!e.error.empty()) {
      row.error = e.error;  // the first range no kernel accepts
      break;
    }
  }
  return row;
}

Result<ExplainReport> explain_model(const Checkpoint& checkpoint, const Device& device,
                                    const SelectionPolicy& policy, const ExplainOptions& options,
                                    const QuantOptions& quant) {
  if (options.tp < 1) {
    return make_error(ErrorCode::kInvalidArgument, "--tp {} must be at least 1", options.tp);
  }
  QL_ASSIGN_OR_RETURN(auto config, parse_quant_config(checkpoint, quant));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  const std::vector<const LinearKernel*> kernels = kernels_for(device.platform);

  ExplainReport report;
  report.device = device.describe();
  for (const LinearLayer& layer : layers) {
    QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(checkpoint, layer));
    const std::string note =
        !layer.unfused_reason.empty() ? layer.unfused_reason : loaded.unfused_reason;
    for (Canonical& weights : loaded.parts) {
      const std::string name = weights.name;
      std::string padding;
      if (options.tp > 1) {
        // Rank 0's part; where a group or FP8 block straddles ranks, the padding plan_shard
        // chose (every rank's, since rank 0 alone may be exact).
        for (int rank = options.tp - 1; rank >= 0; --rank) {
          QL_ASSIGN_OR_RETURN(ShardPlan plan,
                              plan_shard(weights, parallel_kind_for(name), options.tp, rank));
          if (!plan.padding.empty()) {
            padding = plan.padding + (padding.empty() ? "" : "; ") + padding;
          }
          if (rank == 0) weights = std::move(plan.weights);
        }
      }
      LinearProblem problem = LinearProblem::from_canonical(weights, options.tp);
      problem.act_dtype = options.act_dtype;
      problem.out_dtype = options.out_dtype;
      problem.m_max = options.max_rows;
      const std::vector<BucketSelection> buckets =
          evaluate_buckets(kernels, problem, device, policy, name);
      ExplainRow row = explain_row(name, buckets, device, policy);
      row.note = note;
      if (!padding.empty()) row.note += (row.note.empty() ? "" : "; ") + padding;
      report.layers.push_back(std::move(row));
    }
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
    nlohmann::json buckets = nlohmann::json::array();
    for (const ExplainBucket& b : row.buckets) {
      buckets.push_back({{"m_min", b.m_min},
                         {"m_max", b.m_max},
                         {"kernel", b.kernel},
                         {"engine", b.engine},
                         {"problem", b.problem}});
    }
    nlohmann::json selections = nlohmann::json::array();
    for (const ExplainSelection& e : row.selections) {
      nlohmann::json rejected_here = nlohmann::json::array();
      for (const ExplainRejection& r : e.rejected) {
        rejected_here.push_back({{"kernel", r.kernel}, {"reason", r.reason}});
      }
      nlohmann::json sel = {{"m_min", e.m_min},
                            {"m_max", e.m_max},
                            {"kernel", e.kernel},
                            {"mode", e.mode},
                            {"mode_reason", e.mode_reason},
                            {"rejected", std::move(rejected_here)},
                            {"also_accepted", e.also_accepted}};
      if (!e.error.empty()) sel["error"] = e.error;
      selections.push_back(std::move(sel));
    }
    nlohmann::json entry = {{"name", row.name},
                            {"scheme", row.scheme},
                            {"problem", row.problem},
                            {"kernel", row.kernel},
                            {"mode", row.mode},
                            {"mode_reason", row.mode_reason},
                            {"rejected", std::move(rejected)},
                            {"also_accepted", row.also_accepted},
                            {"buckets", std::move(buckets)},
                            {"selections", std::move(selections)}};
    if (!row.error.empty()) entry["error"] = row.error;
    if (!row.note.empty()) entry["note"] = row.note;
    layers_json.push_back(std::move(entry));
  }
  const nlohmann::json doc = {{"device", device}, {"layers", std::move(layers_json)}};
  return doc.dump(2);
}

}  // namespace qlinear
