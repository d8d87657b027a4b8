// Linear: selection per M bucket, prepare on the device, and run by M (qlinear/linear.h).
#include "qlinear/linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "core/log.h"
#include "kernels/device_context.h"
#include "kernels/kernel.h"
#include "kernels/select.h"

namespace qlinear {

struct Linear::Impl {
  std::string name;
  LinearProblem problem;  // the whole layer (M range 1..max_rows)
  Location location;
  std::vector<LinearBucket> buckets;                      // one per (selection bucket, engine)
  std::vector<std::unique_ptr<PreparedLinear>> prepared;  // one per selection bucket
  std::vector<std::size_t> prepared_of;                   // buckets[i] runs prepared[this[i]]
  bool log_runs = false;                                  // QLINEAR_VERBOSE=run

  std::size_t index_for(int64_t rows) const {
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (rows <= buckets[i].m_max) return i;
    }
    return buckets.size() - 1;
  }
};

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;
Linear::~Linear() = default;

Result<Linear> Linear::create(const Canonical& weights, const Device& device,
                              const LinearOptions& options, std::string_view name) {
  if (options.max_rows < 1 || options.max_rows >= kUnboundedM) {
    return make_error(ErrorCode::kInvalidArgument, "layer \"{}\": max_rows {} must be in [1, 2^40)",
                      name, options.max_rows);
  }
  LinearProblem problem = LinearProblem::from_canonical(weights, options.tp);
  problem.act_dtype = options.act_dtype;
  problem.out_dtype = options.out_dtype;
  problem.swiglu_halves = options.swiglu_halves && problem.N % 2 == 0;
  problem.m_min = 1;
  problem.m_max = options.max_rows;
  return create_for_problem(weights, problem, device, options.policy, name);
}

Result<Linear> Linear::create_for_problem(const Canonical& weights, const LinearProblem& problem,
                                          const Device& device, const SelectionPolicy& policy,
                                          std::string_view name) {
  if (problem.K != weights.K() || problem.N != weights.N()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layer \"{}\": problem {} does not match the weights' K={} N={}", name,
                      problem.to_string(), weights.K(), weights.N());
  }
  if (problem.m_max >= kUnboundedM) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layer \"{}\": problem {} has no largest M; give an M range (M1-<max>)", name,
                      problem.to_string());
  }
  QL_ASSIGN_OR_RETURN(DeviceContext * context, device_context(device));
  auto impl = std::make_unique<Impl>();
  impl->name = name.empty() ? weights.name : std::string(name);
  impl->problem = problem;
  impl->location = context->location();
  impl->log_runs = verbose_enabled("run");
  QL_ASSIGN_OR_RETURN(std::vector<BucketSelection> selections,
                      select_buckets(impl->problem, device, policy, impl->name));
  for (const BucketSelection& b : selections) {
    const Selection& s = b.selection;
    QL_ASSIGN_OR_RETURN(std::unique_ptr<PreparedLinear> prepared,
                        s.kernel->prepare(weights, s.problem, *context));
    const std::size_t index = impl->prepared.size();
    impl->prepared.push_back(std::move(prepared));
    for (const Engine& engine : b.engines) {
      LinearProblem bucket_problem = s.problem;
      bucket_problem.m_min = engine.m_min;
      bucket_problem.m_max = engine.m_max;
      impl->buckets.push_back({engine.m_min, engine.m_max, std::string(s.kernel->name()),
                               engine.name, bucket_problem.to_string()});
      impl->prepared_of.push_back(index);
      log_verbose("dispatch", "{} {}: {}{}", impl->name, bucket_problem.m_range_string(),
                  s.kernel->name(), engine.name.empty() ? "" : fmt::format(" [{}]", engine.name));
    }
  }
  return Linear(std::move(impl));
}

std::string_view Linear::name() const { return impl_->name; }
int64_t Linear::K() const { return impl_->problem.K; }
int64_t Linear::N() const { return impl_->problem.N; }
int64_t Linear::max_rows() const { return impl_->problem.m_max; }
DType Linear::act_dtype() const { return impl_->problem.act_dtype; }
DType Linear::out_dtype() const { return impl_->problem.out_dtype; }
Location Linear::location() const { return impl_->location; }
const std::vector<LinearBucket>& Linear::buckets() const { return impl_->buckets; }

const LinearBucket& Linear::bucket_for(int64_t rows) const {
  return impl_->buckets[impl_->index_for(rows)];
}

std::size_t Linear::workspace_bytes(int64_t rows) const {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < impl_->buckets.size(); ++i) {
    const LinearBucket& b = impl_->buckets[i];
    if (b.m_min > rows) break;
    bytes = std::max(
        bytes, impl_->prepared[impl_->prepared_of[i]]->workspace_bytes(std::min(rows, b.m_max)));
  }
  return bytes;
}

bool Linear::capturable() const {
  return std::all_of(impl_->prepared.begin(), impl_->prepared.end(),
                     [](const auto& p) { return p->capturable(); });
}

Status Linear::run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const {
  const int64_t rows = x.rows();
  if (rows > impl_->problem.m_max) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layer \"{}\": x has {} rows; the layer was created for at most {} "
                      "(LinearOptions::max_rows)",
                      impl_->name, rows, impl_->problem.m_max);
  }
  const std::size_t i = impl_->index_for(rows);
  if (impl_->log_runs) {
    const LinearBucket& b = impl_->buckets[i];
    log_message(LogLevel::kVerbose, "run",
                fmt::format("{} M={}: {}{}", impl_->name, rows, b.kernel,
                            b.engine.empty() ? "" : fmt::format(" [{}]", b.engine)));
  }
  return impl_->prepared[impl_->prepared_of[i]]->run(x, y, ctx);
}

Status Linear::run(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                   const LinearFusion& fusion) const {
  const int64_t rows = x.rows();
  // Nothing to fuse, or too many rows (the same error): the plain run, its dispatch line too.
  if (fusion.empty() || rows > impl_->problem.m_max) return run(x, y, ctx);
  const std::size_t i = impl_->index_for(rows);
  if (impl_->log_runs) {
    const LinearBucket& b = impl_->buckets[i];
    log_message(LogLevel::kVerbose, "run",
                fmt::format("{} M={}: {}{} (fused:{}{}{})", impl_->name, rows, b.kernel,
                            b.engine.empty() ? "" : fmt::format(" [{}]", b.engine),
                            fusion.rms ? " rms" : "", fusion.add_norm ? " add-norm" : "",
                            fusion.swiglu ? " swiglu" : ""));
  }
  return impl_->prepared[impl_->prepared_of[i]]->run(x, y, ctx, fusion);
}

FusionSupport Linear::fusion_at(int64_t rows) const {
  if (rows < 1 || rows > impl_->problem.m_max) return {};
  return impl_->prepared[impl_->prepared_of[impl_->index_for(rows)]]->fusion_support(rows);
}

}  // namespace qlinear
