// cpu.fp8.w8a16.avx512 | scheme: FP8 e4m3fn weights, per-tensor/per-channel or block scales
//   (block_k a multiple of 32, any block_n), weight-only (activations stay f32/bf16/f16)
// after prepare: 16-row panels of k pairs ([N/16][K/2][16][2] bytes; with avx512_vbmi two pairs
//   interleave in 8-byte runs for the byte-table decoder), N padded to 64 and K to the chunk,
//   scales per panel row and K block times 2^8 | limits: none on K, N
// numerics: weights decode exactly to bf16; bf16 activations multiply exactly (vdpbf16ps, f32
//   accumulation); f32 activations are split into two bf16 terms (16 significant bits, so f16
//   is exact and f32 keeps a relative error <= 2^-16 per element)
// tested on: AMD EPYC Zen 4 (2 cores, avx512_bf16)
#include <memory>
#include <vector>

#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/fp8_cpu_common.h"
#include "kernels/cpu/fp8_dpbf16.h"
#include "kernels/cpu/thread_budget.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "cpu.fp8.w8a16.avx512";

class PreparedFp8W8a16Avx512 : public PreparedLinear {
 public:
  PreparedFp8W8a16Avx512(const LinearProblem& problem, fp8_cpu::Fp8Panels panels)
      : PreparedLinear(problem, Location::host()), w_(std::move(panels)) {}

  std::size_t workspace_bytes(int64_t m) const override {
    WorkspaceCarver sizing;
    carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const int64_t M = x.rows();
    WorkspaceCarver carver(ctx.workspace);
    const Buffers b = carve(carver, M);
    if (carver.overflowed()) return workspace_overflow(kName);
    const ThreadBudget budget(ctx.threads, w_.panels());  // shared fairly with concurrent calls
    const int threads = budget.threads();
    fp8_cpu::activations_to_bf16(x, w_.Kp, b.hi, b.lo, threads, b.rows);
    fp8_cpu::Bf16Activations a;
    a.M = M;
    a.stride = w_.Kp;
    a.hi = b.hi;
    a.lo = b.lo;
    fp8_cpu::run_dpbf16(w_, a, y, threads, b.yt);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    uint16_t* hi = nullptr;
    uint16_t* lo = nullptr;  // bf16 activations are exact in one term; f32 and f16 need two
    float* rows = nullptr;   // a row of x as f32 per thread
    float* yt = nullptr;     // accumulators per thread
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    const int64_t slots = max_threads();
    b.hi = c.take<uint16_t>(M * w_.Kp);
    if (problem().act_dtype != DType::kBF16) b.lo = c.take<uint16_t>(M * w_.Kp);
    b.rows = c.take<float>(slots * w_.K);
    b.yt = c.take<float>(slots * fp8_cpu::dpbf16_slot_floats(M));
    return b;
  }

  fp8_cpu::Fp8Panels w_;
};

class Fp8W8a16Avx512 : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    fp8_cpu::IsaNeeds needs;
    needs.avx512f = needs.avx512bw = needs.avx512_bf16 = true;
    return fp8_cpu::check_fp8(problem, device, Fp8Mode::kW8A16, needs);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    QL_ASSIGN_OR_RETURN(fp8_cpu::Fp8Panels panels,
                        fp8_cpu::make_panels(*w, fp8_cpu::chunk_k_for(problem, Fp8Mode::kW8A16),
                                             fp8_cpu::dpbf16_layout(), fp8_cpu::prepare_threads()));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedFp8W8a16Avx512>(problem, std::move(panels)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_fp8_w8a16_avx512() {
  static const Fp8W8a16Avx512 kernel;
  return kernel;
}

}  // namespace qlinear
