// Uses qlinear as a library: open a checkpoint folder, explain its layers on this CPU and on a
// simulated H200, run one layer with the selected kernel and check it against the reference
// kernel, with the library's log lines routed to our own sink.
//   consumer <checkpoint dir>      exit 0 when everything agrees
#include <qlinear/qlinear.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

int fail(const qlinear::Status& status) {
  std::fprintf(stderr, "consumer: %s\n", status.to_string().c_str());
  return 1;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// y = layer(x) for rows x [M, K] of f32 on the CPU, with a workspace of the size it asks for.
qlinear::Status run(const qlinear::Linear& layer, const std::vector<float>& x, int64_t M,
                    std::vector<float>* y) {
  y->assign(static_cast<std::size_t>(M * layer.N()), 0.0f);
  const std::size_t bytes = (layer.workspace_bytes(M) + 63) / 64 * 64;
  std::unique_ptr<void, AlignedFree> workspace(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
  qlinear::ExecContext ctx;
  ctx.workspace = {workspace.get(), bytes, qlinear::Location::host()};
  return layer.run(qlinear::ConstMatrixView::dense(x.data(), qlinear::DType::kF32, M, layer.K()),
                   qlinear::MatrixView::dense(y->data(), qlinear::DType::kF32, M, layer.N()), ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer <checkpoint dir>\n");
    return 2;
  }
  const qlinear::Version v = qlinear::version();
  if (v.major != QLINEAR_VERSION_MAJOR || v.minor != QLINEAR_VERSION_MINOR) {
    std::fprintf(stderr, "consumer: headers %d.%d but library %s\n", QLINEAR_VERSION_MAJOR,
                 QLINEAR_VERSION_MINOR, qlinear::version_string());
    return 1;
  }
  std::printf("qlinear %s\n", qlinear::version_string());
  int log_lines = 0;
  qlinear::set_log_sink(
      [&](qlinear::LogLevel, std::string_view, std::string_view) { ++log_lines; });

  auto model = qlinear::Model::open(argv[1]);
  if (!model.ok()) return fail(model.status());
  auto cpu = qlinear::detect_device("cpu");
  if (!cpu.ok()) return fail(cpu.status());
  auto policy = qlinear::make_policy("auto", "", "");
  if (!policy.ok()) return fail(policy.status());
  auto report = model->explain(*cpu, *policy);
  if (!report.ok()) return fail(report.status());
  std::printf("%s: %zu linear layers on %s\n", argv[1], report->layers.size(),
              report->device.c_str());
  for (const qlinear::ExplainRow& row : report->layers) {
    std::printf("  %-40s %-14s %s\n", row.name.c_str(), row.scheme.c_str(), row.kernel.c_str());
  }
  auto h200 = qlinear::simulate_target("cuda:sm90");
  if (!h200.ok()) return fail(h200.status());
  auto gpu_report = model->explain(*h200, *policy);
  if (!gpu_report.ok()) return fail(gpu_report.status());
  std::printf("on a simulated H200: %s runs %s\n", gpu_report->layers.front().name.c_str(),
              gpu_report->layers.front().kernel.empty()
                  ? "(no kernel)"
                  : gpu_report->layers.front().kernel.c_str());

  // One layer through its selected kernel and through the reference kernel.
  const qlinear::LinearLayerInfo& info = model->linear_layers().front();
  qlinear::LinearOptions options;
  options.policy = *policy;
  options.act_dtype = qlinear::DType::kF32;
  options.max_rows = 3;
  auto layer = model->load_linear(info.name, *cpu, options);
  if (!layer.ok()) return fail(layer.status());
  options.policy.backend = qlinear::LinearBackend::kReference;
  auto oracle = model->load_linear(info.name, *cpu, options);
  if (!oracle.ok()) return fail(oracle.status());
  const int64_t M = 3;
  std::vector<float> x(static_cast<std::size_t>(M * layer->K()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  std::vector<float> y;
  std::vector<float> want;
  if (auto s = run(*layer, x, M, &y); !s.ok()) return fail(s);
  if (auto s = run(*oracle, x, M, &want); !s.ok()) return fail(s);
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diff += (y[i] - want[i]) * (y[i] - want[i]);
    norm += want[i] * want[i];
  }
  const double rel = std::sqrt(diff / (norm > 0 ? norm : 1.0));
  std::printf("%s [%lld x %lld] via %s: relative error %.2e vs %s\n", info.name.c_str(),
              static_cast<long long>(layer->K()), static_cast<long long>(layer->N()),
              layer->bucket_for(M).kernel.c_str(), rel, oracle->bucket_for(M).kernel.c_str());
  qlinear::set_log_sink(nullptr);
  std::printf("log lines seen by the sink: %d\n", log_lines);
  return rel <= 1e-5 ? 0 : 1;
}
