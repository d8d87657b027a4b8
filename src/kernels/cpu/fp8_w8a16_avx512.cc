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

#include "kernels/cpu/fp8_cpu_common.h"
#include "kernels/cpu/fp8_dpbf16.h"
#include "kernels/cpu/thread_budget.h"
#include "kernels/reference/kernel_io.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "cpu.fp8.w8a16.avx512";

class PreparedFp8W8a16Avx512 : public PreparedLinear {
 public:
  explicit PreparedFp8W8a16Avx512(fp8_cpu::Fp8Panels panels) : w_(std::move(panels)) {}

  Status run(const TensorView& x, const TensorView& y, Stream& stream) const override {
    QL_RETURN_IF_ERROR(fp8_cpu::check_run_views(x, y, w_.K, w_.N, kName));
    const int64_t M = x.dim(0);
    if (M == 0) return Status::ok_status();
    const ThreadBudget budget(stream, w_.panels());  // shared fairly with concurrent calls
    const int threads = budget.threads();
    // bf16 activations are exact in one term; f32 and f16 need the remainder term.
    const bool two_terms = x.dtype != DType::kBF16;
    std::vector<uint16_t> hi(static_cast<std::size_t>(M * w_.Kp));
    std::vector<uint16_t> lo(two_terms ? hi.size() : 0);
    fp8_cpu::activations_to_bf16(x, w_.Kp, hi.data(), two_terms ? lo.data() : nullptr, threads);
    fp8_cpu::Bf16Activations a;
    a.M = M;
    a.stride = w_.Kp;
    a.hi = hi.data();
    a.lo = two_terms ? lo.data() : nullptr;
    fp8_cpu::run_dpbf16(w_, a, y.data_as<float>(), threads);
    return Status::ok_status();
  }

 private:
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
                                                  const Device& device) const override {
    (void)device;
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    Stream all;
    QL_ASSIGN_OR_RETURN(
        fp8_cpu::Fp8Panels panels,
        fp8_cpu::make_panels(*w, fp8_cpu::chunk_k_for(problem, Fp8Mode::kW8A16),
                             fp8_cpu::dpbf16_layout(), fp8_cpu::worker_threads(all)));
    return std::unique_ptr<PreparedLinear>(
        std::make_unique<PreparedFp8W8a16Avx512>(std::move(panels)));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_fp8_w8a16_avx512() {
  static const Fp8W8a16Avx512 kernel;
  return kernel;
}

}  // namespace qlinear
