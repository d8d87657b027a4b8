// The shared half of the int8-activation CPU kernels: check(), prepare (the int_tiles repack),
// the per-call quantized activation rows and the OpenMP job loop (see int_a8_tiles.h).
#include "kernels/cpu/int_a8_tiles.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/thread_budget.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear::int_a8 {
namespace {

using int_tiles::kRowChunk;
using int_tiles::kTileN;
using int_tiles::TiledWeights;

uint32_t quad(const int8_t* q, int stride) {
  uint32_t word = 0;
  for (int i = 0; i < 4; ++i) {
    word |= static_cast<uint32_t>(static_cast<uint8_t>(q[i * stride])) << (8 * i);
  }
  return word;
}

// x (already permuted) -> int8 per row and contiguous group, packed for the micro-kernel.
A8Rows quantize_rows(const TiledWeights& w, const std::vector<float>& x, int64_t M, int threads) {
  const int64_t group_size = w.K / w.groups;
  A8Rows rows;
  rows.count = M;
  rows.quads_per_step = w.bits == 4 ? 2 : 1;
  rows.quads.assign(static_cast<size_t>(M * w.steps * rows.quads_per_step), 0);
  rows.scales.assign(static_cast<size_t>(M * w.groups), 0.0f);
  rows.qsums.assign(static_cast<size_t>(M * w.groups), 0.0f);
  std::vector<int8_t> codes(static_cast<size_t>(M * w.K));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && M >= 8)
  for (int64_t m = 0; m < M; ++m) {
    quantize_rows_avx512(x.data(), m, m + 1, w.K, group_size, codes.data(), rows.scales.data(),
                         rows.qsums.data());
    const int8_t* row = codes.data() + m * w.K;
    uint32_t* dst = rows.quads.data() + m * w.steps * rows.quads_per_step;
    for (int64_t d = 0; d < w.steps; ++d) {
      if (w.bits == 4) {
        dst[2 * d] = quad(row + 8 * d, 2);
        dst[2 * d + 1] = quad(row + 8 * d + 1, 2);
      } else {
        dst[d] = quad(row + 4 * d, 1);
      }
    }
  }
  return rows;
}

class A8Linear final : public PreparedLinear {
 public:
  A8Linear(std::string_view name, TiledWeights w) : name_(name), w_(std::move(w)) {}

  Status run(const TensorView& x, const TensorView& y, Stream& stream) const override {
    QL_ASSIGN_OR_RETURN(std::vector<float> xf, activations_as_f32(x, w_.K, name_));
    const int64_t M = x.dim(0);
    QL_RETURN_IF_ERROR(check_output(y, M, w_.N, name_));
    if (M == 0) return Status::ok_status();
    xf = int_tiles::permute_columns(std::move(xf), M, w_.K, w_.perm);
    const int64_t chunks = (M + kRowChunk - 1) / kRowChunk;
    const ThreadBudget budget(stream, w_.tiles * chunks);  // shared fairly with concurrent calls
    const int threads = budget.threads();
    const A8Rows rows = quantize_rows(w_, xf, M, threads);
    int_tiles::for_each_tile_job(
        w_, M, 1, y.data_as<float>(), threads,
        [&](int64_t tile, int64_t r0, int64_t r1, float* ytile) {
          tile_job_vnni(w_, rows, tile, r0, r1, ytile);
        },
        kRowChunk);
    return Status::ok_status();
  }

 private:
  std::string_view name_;
  TiledWeights w_;
};

}  // namespace

int64_t max_group_for_bits(int bits) {
  const int64_t max_code = (int64_t{1} << bits) - 1;
  return ((int64_t{1} << 31) - 1) / (max_code * 127);
}

Verdict IntA8Kernel::check(const LinearProblem& problem, const Device& device) const {
  if (Verdict cpu = check_cpu_device(device); !cpu.ok()) return cpu;
#if !defined(__x86_64__)
  return Verdict::reject(Reason::kNotCompiled, "x86-64 kernel; this binary is not for x86-64");
#endif
  const CpuFeatures& cpu = device.cpu;
  if (!cpu.avx512f || !cpu.avx512bw || !cpu.avx512_vnni) {
    return Verdict::reject(Reason::kMissingIsa, "needs avx512f avx512bw avx512_vnni");
  }
  if (problem.scheme != WeightScheme::kInt) {
    return Verdict::reject(Reason::kScheme, "needs integer weights");
  }
  if (problem.bits != bits_) {
    return Verdict::reject(Reason::kBits, fmt::format("bits={}; needs {}", problem.bits, bits_));
  }
  if (Verdict acts = check_int_activations(problem, /*int8_kernel=*/true); !acts.ok()) return acts;
  if (Verdict io = check_io_dtypes(problem); !io.ok()) return io;
  const int rows_per_word = 32 / bits_;
  if (problem.group_size <= 0 || problem.group_size % rows_per_word != 0 ||
      problem.K % problem.group_size != 0) {
    return Verdict::reject(Reason::kGroupSize,
                           fmt::format("group_size={} must be a multiple of {} dividing K={}",
                                       problem.group_size, rows_per_word, problem.K));
  }
  if (problem.group_size > max_group_for_bits(bits_)) {
    return Verdict::reject(Reason::kGroupSize,
                           fmt::format("group_size={} > {}: int32 accumulators could overflow",
                                       problem.group_size, max_group_for_bits(bits_)));
  }
  return Verdict::accept();
}

Result<std::unique_ptr<PreparedLinear>> IntA8Kernel::prepare(const Canonical& weights,
                                                             const LinearProblem& problem,
                                                             const Device& device) const {
  QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, name_));
  LinearProblem actual = LinearProblem::from_canonical(weights);
  actual.int8_activations = true;
  actual.act_dtype = problem.act_dtype;
  if (Verdict v = check(actual, device); !v.ok()) {
    return make_error(ErrorCode::kInvalidArgument, "{}: layer \"{}\": {} ({})", name_, weights.name,
                      v.to_string(), actual.to_string());
  }
  QL_ASSIGN_OR_RETURN(int_tiles::TiledWeights t,
                      int_tiles::tile_int_weights(*w, 0.0f, name_, weights));
  return std::unique_ptr<PreparedLinear>(new A8Linear(name_, std::move(t)));
}

}  // namespace qlinear::int_a8
