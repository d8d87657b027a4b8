// header_parse_time [N ...]: how long reading a checkpoint takes as a function of its tensor
// count (issue 13: the old header parser was quadratic, 80k tensors took over 120 s). For each N
// it writes one safetensors file of N one-byte tensors with Llama-like names, then times
// (median of 3; wall seconds and this process's CPU seconds) the writer, SafetensorsFile::open,
// and Checkpoint::open + parse_quant_config + plan_linear_layers (model validation included). A
// timing tool, not a test: docs/fuzzing.md and docs/errors.md quote its numbers with the command
// that produced them.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "core/log.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Seconds {
  double wall = 0;
  double cpu = 0;  // this process's CPU time: what the 2-core VM's neighbours do not inflate
};

// The median of 3 runs, by wall time.
template <class F>
Seconds median_seconds(F&& f) {
  std::vector<Seconds> times;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    f();
    times.push_back({std::chrono::duration<double>(Clock::now() - start).count(),
                     static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC});
  }
  std::sort(times.begin(), times.end(),
            [](const Seconds& a, const Seconds& b) { return a.wall < b.wall; });
  return times[1];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qlinear;
  std::vector<int64_t> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoll(argv[i]));
  if (counts.empty()) counts = {20000, 40000, 80000, 100000};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("qlinear_header_parse_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  if (!write_output_file((dir / "config.json").string(), R"({"architectures": ["TimingOnly"]})")
           .ok()) {
    return 1;
  }
  fmt::print("{:>8}  {:>9}  {:>15}  {:>15}  {:>15}\n", "tensors", "header MB", "write s (cpu)",
             "open s (cpu)", "plan s (cpu)");
  for (const int64_t n : counts) {
    SafetensorsWriter writer;
    const std::vector<uint8_t> byte = {1};
    for (int64_t i = 0; i < n; ++i) {
      writer.add_values(fmt::format("model.layers.{}.block.t{}.weight", i / 16, i % 16), DType::kU8,
                        {1}, byte);
    }
    const std::string path = (dir / "model.safetensors").string();
    const Seconds write_s = median_seconds([&] { (void)writer.write(path); });
    uint64_t header = 0;
    const Seconds open_s = median_seconds([&] {
      auto file = SafetensorsFile::open(path);
      if (!file.ok()) std::abort();
      header = (*file)->file_size() - static_cast<uint64_t>(n);
    });
    const Seconds plan_s = median_seconds([&] {
      auto checkpoint = Checkpoint::open(dir.string());
      if (!checkpoint.ok()) std::abort();
      auto config = parse_quant_config(*checkpoint);
      if (!config.ok()) std::abort();
      auto layers = plan_linear_layers(*checkpoint, **config);
      if (!layers.ok()) std::abort();
    });
    const auto cell = [](const Seconds& t) {
      return fmt::format("{:.3f} ({:.3f})", t.wall, t.cpu);
    };
    fmt::print("{:>8}  {:>9.1f}  {:>15}  {:>15}  {:>15}\n", n, header / 1e6, cell(write_s),
               cell(open_s), cell(plan_s));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
