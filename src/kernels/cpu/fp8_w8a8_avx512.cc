// cpu.fp8.w8a8.avx512 | scheme: FP8 e4m3fn weights (per-tensor/per-channel or block scales,
//   block_k a multiple of 32) x FP8 activations quantized at run time by the one contract of
//   kernels/common/activation_quant.h: dynamic per-token, dynamic per-tensor, static
//   per-tensor (input_scale) or dynamic per-group (group = block_k, or 128)
// after prepare: the cpu.fp8.w8a16.avx512 panels (k pairs of 16 rows, scales x 2^8)
// activations: quantized by fp8_act_quant_avx512.h, bit for bit the reference quantizer's rules
// numerics: both operands decode exactly to bf16, so vdpbf16ps forms every a_q*w_q exactly and
//   sums in f32; each K chunk (<= 256, inside one weight block and one activation group) is
//   scaled by s_a(m, chunk) * s_w(n, chunk).
// On a CPU W8A8 buys no speed over W8A16: the weight bytes and the bf16 dot products are the
//   same (bench/results/cpu.md: within a few percent of cpu.fp8.w8a16.avx512 at every M). It
//   exists to reproduce the numerics of a W8A8 checkpoint (what the FP8 mode table asks for
//   when a kernel can).
// tested on: AMD EPYC Zen 4 (2 cores, avx512_bf16)
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cpu/fp8_act_quant_avx512.h"
#include "kernels/cpu/fp8_cpu_common.h"
#include "kernels/cpu/fp8_dpbf16.h"
#include "kernels/cpu/thread_budget.h"
#include "qlinear/dtype.h"

namespace qlinear {
namespace {

constexpr std::string_view kName = "cpu.fp8.w8a8.avx512";

class PreparedFp8W8a8Avx512 : public PreparedLinear {
 public:
  PreparedFp8W8a8Avx512(const LinearProblem& problem, fp8_cpu::Fp8Panels panels, ActQuant act,
                        int64_t group_k, float input_scale)
      : PreparedLinear(problem, Location::host()),
        w_(std::move(panels)),
        act_(act),
        group_k_(group_k),
        input_scale_(input_scale) {}

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
    fp8_cpu::ActQuantRequest request;
    request.kind = act_;
    request.static_scale = input_scale_;
    request.group_k = group_k_;
    request.Kp = w_.Kp;
    request.chunk_k = w_.chunk_k;
    const Status quantized =
        fp8_cpu::quantize_activations_avx512(x, request, b.values, b.chunk_scales, threads);
    if (!quantized.ok()) return quantized.with_context(kName);
    fp8_cpu::Bf16Activations a;
    a.M = M;
    a.stride = w_.Kp;
    a.hi = b.values;
    a.chunk_scales = b.chunk_scales;
    fp8_cpu::run_dpbf16(w_, a, y, threads, b.yt);
    return Status::ok_status();
  }

 private:
  struct Buffers {
    uint16_t* values = nullptr;
    float* chunk_scales = nullptr;
    float* yt = nullptr;
  };
  Buffers carve(WorkspaceCarver& c, int64_t M) const {
    Buffers b;
    b.values = c.take<uint16_t>(M * w_.Kp);
    b.chunk_scales = c.take<float>(M * w_.chunks());
    b.yt = c.take<float>(int64_t{max_threads()} * fp8_cpu::dpbf16_slot_floats(M));
    return b;
  }

  fp8_cpu::Fp8Panels w_;
  ActQuant act_;
  int64_t group_k_;
  float input_scale_;
};

class Fp8W8a8Avx512 : public LinearKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kNative; }
  Platform platform() const override { return Platform::kCpu; }

  Verdict check(const LinearProblem& problem, const Device& device) const override {
    fp8_cpu::IsaNeeds needs;
    needs.avx512f = needs.avx512bw = needs.avx512_bf16 = true;
    return fp8_cpu::check_fp8(problem, device, Fp8Mode::kW8A8, needs);
  }

  Result<std::unique_ptr<PreparedLinear>> prepare(const Canonical& weights,
                                                  const LinearProblem& problem,
                                                  DeviceContext& /*device*/) const override {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kName));
    const ActQuant act = w8a8_act_quant(problem);
    if (act == ActQuant::kStaticTensor && !(std::isfinite(w->input_scale) && w->input_scale > 0)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: layer \"{}\": static activation quantization needs input_scale "
                        "finite and > 0, got {}",
                        kName, weights.name, w->input_scale);
    }
    QL_ASSIGN_OR_RETURN(fp8_cpu::Fp8Panels panels,
                        fp8_cpu::make_panels(*w, fp8_cpu::chunk_k_for(problem, Fp8Mode::kW8A8),
                                             fp8_cpu::dpbf16_layout(), fp8_cpu::prepare_threads()));
    return std::unique_ptr<PreparedLinear>(std::make_unique<PreparedFp8W8a8Avx512>(
        problem, std::move(panels), act, w8a8_act_group_k(problem), w->input_scale));
  }
};

}  // namespace

const LinearKernel& kernel_cpu_fp8_w8a8_avx512() {
  static const Fp8W8a8Avx512 kernel;
  return kernel;
}

}  // namespace qlinear
