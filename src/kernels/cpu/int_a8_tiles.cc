// The shared half of the int8-activation CPU kernels: check(), prepare (the int_tiles repack),
// the per-call quantized activation rows and the OpenMP job loop (see int_a8_tiles.h).
#include "kernels/cpu/int_a8_tiles.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/thread_budget.h"

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

// The buffers of one call, in the caller's workspace.
struct A8Buffers {
  float* xf = nullptr;        // x as f32 [M, K]
  float* permuted = nullptr;  // act-order: x[:, perm] [M, K]
  int8_t* codes = nullptr;    // [M, K]
  uint32_t* quads = nullptr;  // [M, steps, quads_per_step]
  float* scales = nullptr;    // [M, groups]
  float* qsums = nullptr;     // [M, groups]
  float* ytiles = nullptr;    // a job's output tile per thread
};

int quads_per_step(const TiledWeights& w) { return w.bits == 4 ? 2 : 1; }

A8Buffers carve_a8(WorkspaceCarver& c, const TiledWeights& w, int64_t M) {
  A8Buffers b;
  b.xf = c.take<float>(M * w.k_in);
  if (!w.perm.empty()) b.permuted = c.take<float>(M * w.K);
  b.codes = c.take<int8_t>(M * w.K);
  b.quads = c.take<uint32_t>(M * w.steps * quads_per_step(w));
  b.scales = c.take<float>(M * w.groups);
  b.qsums = c.take<float>(M * w.groups);
  b.ytiles = c.take<float>(int64_t{max_threads()} * kRowChunk * kTileN);
  return b;
}

// x (already permuted) -> int8 per row and contiguous group, packed for the micro-kernel.
A8Rows quantize_rows(const TiledWeights& w, const float* x, int64_t M, int threads,
                     const A8Buffers& b) {
  const int64_t group_size = w.K / w.groups;
  A8Rows rows;
  rows.count = M;
  rows.quads_per_step = quads_per_step(w);
  rows.quads = b.quads;
  rows.scales = b.scales;
  rows.qsums = b.qsums;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && M >= 8)
  for (int64_t m = 0; m < M; ++m) {
    quantize_rows_avx512(x, m, m + 1, w.K, group_size, b.codes, b.scales, b.qsums);
    const int8_t* row = b.codes + m * w.K;
    uint32_t* dst = b.quads + m * w.steps * rows.quads_per_step;
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
  A8Linear(const LinearProblem& problem, std::string_view name, TiledWeights w)
      : PreparedLinear(problem, Location::host()), name_(name), w_(std::move(w)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve_a8(sizing, w_, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    WorkspaceCarver carver(ctx.workspace);
    const A8Buffers b = carve_a8(carver, w_, M);
    if (carver.overflowed()) return workspace_overflow(name_);
    const float* xs = int_tiles::rows_in_k_order(x, w_, b.xf, b.permuted);
    const int64_t chunks = (M + kRowChunk - 1) / kRowChunk;
    const ThreadBudget budget(ctx.threads, w_.tiles * chunks);  // shared with concurrent calls
    const int threads = budget.threads();
    const A8Rows rows = quantize_rows(w_, xs, M, threads, b);
    int_tiles::for_each_tile_job(
        w_, M, 1, y, threads,
        [&](int64_t tile, int64_t r0, int64_t r1, float* ytile) {
          tile_job_vnni(w_, rows, tile, r0, r1, ytile);
        },
        kRowChunk, b.ytiles);
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
  QL_REQUIRE(require_platform(device, Platform::kCpu));
#if !defined(__x86_64__)
  return Verdict::reject(Reason::kNotCompiled, "x86-64 kernel; this binary is not for x86-64");
#endif
  const CpuFeatures& cpu = device.cpu;
  if (!cpu.avx512f || !cpu.avx512bw || !cpu.avx512_vnni) {
    return Verdict::reject(Reason::kMissingIsa, "needs avx512f avx512bw avx512_vnni");
  }
  QL_REQUIRE(require_scheme(problem, WeightScheme::kInt));
  if (problem.bits != bits_) {
    return Verdict::reject(Reason::kBits, fmt::format("bits={}; needs {}", problem.bits, bits_));
  }
  QL_REQUIRE(require_int_activations(problem, /*int8_kernel=*/true));
  QL_REQUIRE(require_io_dtypes(problem));
  const int rows_per_word = 32 / bits_;
  // Act-order pads its groups (int_tiles.h), so only then may group_size leave K ragged.
  if (problem.group_size <= 0 || problem.group_size % rows_per_word != 0 ||
      (!problem.act_order && problem.K % problem.group_size != 0)) {
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
                                                             DeviceContext& device) const {
  QL_ASSIGN_OR_RETURN(int_tiles::TiledWeights t,
                      int_tiles::tile_for_kernel(*this, weights, problem, device,
                                                 /*int8_activations=*/true));
  return std::unique_ptr<PreparedLinear>(std::make_unique<A8Linear>(problem, name_, std::move(t)));
}

}  // namespace qlinear::int_a8
