// Host code of the int decode kernel (cuda.int.gemv.sm80): the prepared layout (codes repacked on
// the GPU by wo_mma.cu's repack kernel, scales and zero points re-laid as per-tile pairs), the
// per-call split of K over warps, and the launch. The kernel is described in int_gemv.cu.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/host/cuda_host.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime/cuda_check.h"

namespace qlinear {
namespace {

using cuda_host::DeviceCarver;
namespace launch = cuda_launch;
constexpr int64_t kStep = launch::kGemvStepRows;
constexpr int kMaxWarps = launch::kGemvMaxWarps;

class GemvPrepared final : public PreparedLinear {
 public:
  GemvPrepared(const LinearProblem& problem, Location location)
      : PreparedLinear(problem, location) {}

  std::size_t workspace_bytes(int64_t m) const override {
    DeviceCarver carver;
    (void)carver.take<uint16_t>(static_cast<std::size_t>(m * Kpad));
    return carver.bytes_needed();
  }
  bool capturable() const override { return true; }
  // Both halves of the norm fusion at every M, with 4-bit codes in the cp.async ring (their
  // kernels have a fused form, int_gemv.cu fused_finish; the 8-bit register pipelines have not).
  // The SwiGLU epilogue where prepare paired the [gate | up] columns (half_cols); a paired layer
  // has no add-norm epilogue (its tiles do not hold 16 consecutive columns of one norm).
  FusionSupport fusion_support(int64_t m) const override {
    (void)m;
    const bool ring4 = variant.code == launch::kU4 && variant.pipe == launch::kGemvRing;
    return {ring4 && half_cols == 0, ring4, ring4 && half_cols > 0};
  }

  // How the warps keep loads in flight (launch::GemvPipe). 4-bit: the cp.async ring with the
  // offset-left-in dequantization (1.3-1.7x faster than the register pipelines at M = 1-8 on the
  // H200). 8-bit, whose ring path still dequantizes exactly step by step, measured 1.0-1.17x
  // slower in the ring at M = 1, so it keeps the register pipelines: two stages for K >= N (few
  // column tiles, long K slices per warp), one stage of 8 vectors and 24 warps per SM for wide
  // layers (bench/results/h200.md). QLINEAR_CUDA_GEMV_PIPE=0|1|2 forces one (a measurement knob).
  int pipeline() const {
    static const int forced = [] {
      const char* v = std::getenv("QLINEAR_CUDA_GEMV_PIPE");
      return v != nullptr ? std::atoi(v) : -1;
    }();
    if (forced >= 0 && forced < launch::kGemvPipes) return forced;
    if (variant.code == launch::kU4) return launch::kGemvRing;
    return problem().K >= problem().N ? launch::kGemvTwoStages : launch::kGemvOneStage;
  }

  std::string kernel;
  launch::GemvVariant variant;  // pipe set at prepare (pipeline()), n8 per call
  int64_t tiles = 0;
  int64_t Kpad = 0;
  int groups = 1;
  int group_shift = -1;
  int sym_zero = 8;
  // > 0: the columns are paired for the SwiGLU epilogue (launch::GemvFusion::half_cols).
  int half_cols = 0;
  bool act_order = false;
  int sm_count = 1;
  // Resident blocks (of 8 warps) per SM of the layer's pipeline, per n8 (measured at prepare).
  int occupancy[2] = {1, 1};
  Tensor w, scales, zeros, perm, bias;
  void* default_stream = nullptr;

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    return launch_run(x, y, ctx, nullptr);
  }
  Status do_run_fused(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                      const LinearFusion& fusion) const override {
    return launch_run(x, y, ctx, &fusion);
  }

 private:
  Status launch_run(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                    const LinearFusion* fusion) const {
    const LinearProblem& p = problem();
    const int64_t M = x.rows();
    const cudaStream_t stream = cuda_host::run_stream(ctx, default_stream);
    DeviceCarver carver(ctx.workspace);
    void* staged = carver.take<uint16_t>(static_cast<std::size_t>(M * Kpad));
    if (carver.overflowed()) return workspace_overflow(kernel);

    launch::GemvParams prm{};
    prm.w = w.data();
    prm.scales = scales.data();
    prm.zeros = variant.zeros ? zeros.data_as<uint8_t>() : nullptr;
    prm.bias = bias.data_as<float>();  // null without a bias
    prm.x = x.data();
    prm.ldx = cuda_host::usable_ld(M, x.ld(), p.K);
    const bool aligned = reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 && prm.ldx % 8 == 0;
    if (act_order || !aligned) {
      QL_CUDA(launch::wo_stage_x(x.data(), prm.ldx, act_order ? perm.data_as<int32_t>() : nullptr,
                                 M, p.K, Kpad, staged, stream));
      prm.x = staged;
      prm.ldx = Kpad;
    }
    prm.y = y.data();
    prm.ldy = cuda_host::usable_ld(M, y.ld(), p.N);
    prm.M = static_cast<int>(M);
    prm.N = static_cast<int>(p.N);
    prm.K = static_cast<int>(p.K);
    prm.steps = static_cast<int>(Kpad / kStep);
    prm.groups = groups;
    prm.group_shift = group_shift;
    prm.sym_zero = sym_zero;
    prm.out_code = cuda_host::dtype_code(p.out_dtype);
    prm.tiles = static_cast<int>(tiles);
    launch::GemvFusion fu{};
    if (fusion != nullptr && fusion->add_norm) {
      const AddNormEpilogue& e = *fusion->add_norm;
      fu.residual = static_cast<float*>(e.residual.data());
      fu.ldr = cuda_host::usable_ld(M, e.residual.ld(), p.N);
      fu.norm_weight = static_cast<const float*>(e.weight.data());
      fu.pre = e.pre.data();
      fu.ldpre = cuda_host::usable_ld(M, e.pre.ld(), p.N);
      fu.pre_code = cuda_host::dtype_code(e.pre.dtype());
      fu.partials_out = static_cast<double*>(e.partials.data());
      fu.ldpo = cuda_host::usable_ld(M, e.partials.ld(), e.partials.cols());
    }
    if (fusion != nullptr && fusion->rms) {
      const RmsPrologue& r = *fusion->rms;
      fu.partials_in = static_cast<const double*>(r.partials.data());
      fu.ldpi = cuda_host::usable_ld(M, r.partials.ld(), r.partials.cols());
      fu.partial_count = static_cast<int>(r.partials.cols());
      fu.norm_cols = static_cast<int>(r.cols);
      fu.eps = r.eps;
    }
    fu.half_cols = half_cols;
    if (fusion != nullptr && fusion->swiglu) {
      const MatrixView& out = fusion->swiglu->out;
      fu.swiglu_out = out.data();
      fu.ldsw = cuda_host::usable_ld(M, out.ld(), p.N / 2);
      fu.sw_code = cuda_host::dtype_code(out.dtype());
    }
    launch::GemvVariant v = variant;
    v.n8 = M <= 8 ? 1 : 2;
    // A paired layer's plain runs store through the fused kernels' column map too.
    v.fuse = half_cols > 0 || (fusion != nullptr && !fusion->empty());
    choose_split(prm, v.n8);
    if (v.fuse) return cuda_status(launch::int_gemv_launch_fused(v, prm, fu, stream), kernel);
    return cuda_status(launch::int_gemv_launch(v, prm, stream), kernel);
  }

  // Warps per tile (wk, splitting K) and tiles per block. The smallest wk whose grid fits one
  // wave of resident blocks at least half full (three quarters for M 9-16, below): the longest
  // stream per warp and the least reduction while the SMs are still fed (H200, 4096x28672: wk 1
  // 30.6 us against the wave score's wk 8 34.8). Else the split whose last wave of blocks is
  // fullest, slightly penalised per doubling (each one adds a reduction and shortens the stream a
  // warp keeps in flight), with at least 2 steps per warp. Both rules picked the fastest wk of the
  // sweep on each of the seven shapes of bench/results/h200-decode-2026-12-02b.
  // QLINEAR_CUDA_GEMV_WK=1|2|4|8 fixes wk (a tuning knob for measurements).
  void choose_split(launch::GemvParams& prm, int n8) const {
    static const int forced = [] {
      const char* v = std::getenv("QLINEAR_CUDA_GEMV_WK");
      return v != nullptr ? std::atoi(v) : 0;
    }();
    // Warps per block (tiles x wk; at least wk): 2 for M <= 8, 8 for M 9-16. Blocks of 2 spread
    // the tiles more evenly over the SMs (H200, M = 1, bench/results/h200-attention-runs-2026-12-04
    // call 8: 8192x10240 18.2 against 20.1 us, 28672x8192 40.0 against 41.2, the 8B layers within
    // 1.5% either way, 8B decode 395.0 against 393.7 tok/s); M 9-16 was not measured so.
    // QLINEAR_CUDA_GEMV_BLOCK_WARPS=1|2|4|8 sets it for every M (a measurement knob).
    static const int forced_block_warps = [] {
      const char* v = std::getenv("QLINEAR_CUDA_GEMV_BLOCK_WARPS");
      const int n = v != nullptr ? std::atoi(v) : 0;
      return n == 1 || n == 2 || n == 4 || n == 8 ? n : 0;
    }();
    const int block_warps = forced_block_warps > 0 ? forced_block_warps : (n8 == 1 ? 2 : kMaxWarps);
    auto tpb_of = [&](int wk) { return std::max(1, block_warps / wk); };
    auto apply = [&](int wk) {
      prm.wk = wk;
      prm.tpb = tpb_of(wk);
    };
    if (forced == 1 || forced == 2 || forced == 4 || forced == 8) {
      apply(std::min(forced, std::max(1, prm.steps)));
      return;
    }
    // Resident warps (measured for blocks of 8; smaller blocks are register-bound the same).
    const double capacity =
        static_cast<double>(std::max(1, occupancy[n8 - 1])) * kMaxWarps * sm_count;
    auto waves_of = [&](int wk) {
      return std::ceil(static_cast<double>(prm.tiles) / tpb_of(wk)) * tpb_of(wk) * wk / capacity;
    };
    // "Fed": a wave half full at 3 blocks (24 warps) per SM; the two-n8-tile ring holds 2 blocks
    // (16 warps) per SM, and half of that streamed too little (H200, M = 16, 8192x10240: wk 2 at
    // 0.61 of a wave 35.8 us, wk 8 33.2; bench/results/h200-decode-2026-12-02d), so it asks for
    // three quarters (12 warps per SM either way).
    const double fed = n8 == 1 ? 0.5 : 0.75;
    for (int wk = 1; wk <= kMaxWarps; wk *= 2) {
      if (wk > 1 && prm.steps < 2 * wk) break;
      const double waves = waves_of(wk);
      if (waves > 1.0) break;  // more warps per tile only make more waves
      if (waves >= fed) {
        apply(wk);
        return;
      }
    }
    int best = 1;
    double best_score = -1.0;
    for (int wk = 1; wk <= kMaxWarps; wk *= 2) {
      if (wk > 1 && prm.steps < 2 * wk) break;
      const double waves = waves_of(wk);
      const double score = waves / std::ceil(waves) - 0.03 * std::log2(static_cast<double>(wk));
      if (score > best_score + 1e-9) {
        best_score = score;
        best = wk;
      }
    }
    apply(best);
  }
};

bool exact_f16(float v) {
  if (!std::isfinite(v)) return false;
  return f16_to_f32(f32_to_f16(v)) == v;
}

}  // namespace

PreparedResult cuda_prepare_int_gemv(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device) {
  QL_CUDA(cudaSetDevice(device.device().index));
  const cudaStream_t stream = static_cast<cudaStream_t>(device.default_stream());
  auto prep = std::make_unique<GemvPrepared>(problem, device.location());
  prep->kernel = std::string(kernel);
  prep->default_stream = device.default_stream();
  prep->sm_count = std::max(1, device.device().sm_count);
  QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kernel));
  const int64_t K = problem.K;
  const int64_t N = problem.N;
  const int64_t Npad = (N + 15) / 16 * 16;
  prep->tiles = Npad / 16;
  prep->Kpad = (K + kStep - 1) / kStep * kStep;
  const int bits = w->bits;
  launch::GemvVariant& v = prep->variant;
  v.code = bits == 4 ? launch::kU4 : launch::kU8;
  v.bf16 = problem.act_dtype == DType::kBF16;
  v.zeros = !w->zeros.empty();
  v.pipe = prep->pipeline();
  // A [gate | up] layer (swiglu_halves) whose halves fill whole 8-column groups gets its columns
  // paired: tile t holds gate columns 8t..8t+7 as its columns 0-7 and the matching up columns as
  // 8-15, so that each lane's fragment rows g and g + 8 are a gate column and its up column and
  // the fused finish can take the SwiGLU (4-bit ring kernels, the ones with a fused form).
  if (problem.swiglu_halves && v.code == launch::kU4 && v.pipe == launch::kGemvRing &&
      N % 16 == 0) {
    prep->half_cols = static_cast<int>(N / 2);
  }
  const int64_t half_cols = prep->half_cols;
  // The prepared column of layer column n.
  auto prepared_col = [&](int64_t n) {
    if (half_cols == 0) return n;
    const int64_t j = n < half_cols ? n : n - half_cols;
    return (j / 8) * 16 + (n < half_cols ? 0 : 8) + j % 8;
  };
  prep->sym_zero = 1 << (bits - 1);
  prep->groups = static_cast<int>(w->num_groups);
  if (prep->groups > 1) {
    const int gs = w->group_size;
    if (gs < 32 || (gs & (gs - 1)) != 0) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: layer \"{}\": needs a power-of-two group size >= 32, has {}", kernel,
                        weights.name, gs);
    }
    prep->group_shift = __builtin_ctz(static_cast<unsigned>(gs));
    v.groups = gs == 32 ? launch::kGemvG32 : gs == 64 ? launch::kGemvG64 : launch::kGemvGWide;
  }
  prep->act_order = !w->g_idx.empty();
  Tensor perm_dev;
  if (prep->act_order) {
    // Rows sorted by group (stable): group g then holds sorted rows [g * gs, (g + 1) * gs).
    std::vector<int32_t> order(static_cast<std::size_t>(K));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return w->g_idx[a] < w->g_idx[b]; });
    for (int64_t kp = 0; kp < K; ++kp) {
      if (w->g_idx[order[kp]] != kp / w->group_size) {
        return make_error(ErrorCode::kUnsupported,
                          "{}: layer \"{}\": act-order groups must hold exactly group_size={} "
                          "rows each (row {} of the sorted order is in group {})",
                          kernel, weights.name, w->group_size, kp, w->g_idx[order[kp]]);
      }
    }
    QL_ASSIGN_OR_RETURN(perm_dev, cuda_host::upload(device, order, DType::kI32));
  }

  // Scales and zero points as [tiles][groups][8] pairs (column g, column g + 8) of each tile.
  const int64_t G = w->num_groups;
  const int64_t table = prep->tiles * G * 16;
  auto at = [&](int64_t t, int64_t g, int64_t c) {
    // c: column in the tile; pair slot (c % 8) * 2 + c / 8.
    return (t * G + g) * 16 + (c % 8) * 2 + c / 8;
  };
  std::vector<float> sc(static_cast<std::size_t>(table), 0.0f);
  std::vector<uint8_t> zp(v.zeros ? static_cast<std::size_t>(table) : 0, 0);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t n = 0; n < N; ++n) {
      const int64_t pn = prepared_col(n);
      const int64_t i = at(pn / 16, g, pn % 16);
      sc[static_cast<std::size_t>(i)] = w->scales[g * N + n];
      if (v.zeros) zp[static_cast<std::size_t>(i)] = w->zeros[g * N + n];
    }
  }
  v.f16_scale = std::all_of(w->scales.begin(), w->scales.end(), exact_f16);
  if (v.f16_scale) {
    std::vector<uint16_t> half(sc.size());
    for (std::size_t i = 0; i < sc.size(); ++i) half[i] = f32_to_f16(sc[i]);
    QL_ASSIGN_OR_RETURN(prep->scales, cuda_host::upload(device, half, DType::kF16));
  } else {
    QL_ASSIGN_OR_RETURN(prep->scales, cuda_host::upload(device, sc, DType::kF32));
  }
  if (v.zeros) {
    QL_ASSIGN_OR_RETURN(prep->zeros, cuda_host::upload(device, zp, DType::kU8));
  }
  if (!w->bias.empty()) {
    QL_ASSIGN_OR_RETURN(prep->bias, cuda_host::upload(device, w->bias, DType::kF32));
  }

  // Codes into wo_repack's fragment order (16-column tiles, 64 or 32 rows per vector).
  const int64_t wo_steps = prep->Kpad / launch::wo_step_rows(v.code);
  Tensor src_q;
  if (half_cols == 0) {
    QL_ASSIGN_OR_RETURN(src_q, cuda_host::upload(device, w->qweight, DType::kI32));
  } else {
    // Paired: the packed words' columns in prepared order (the bias keeps the layer's order: the
    // finish indexes it by the layer's column).
    std::vector<uint32_t> paired(w->qweight.size());
    const int64_t rows = static_cast<int64_t>(w->qweight.size()) / N;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t n = 0; n < N; ++n) {
        paired[static_cast<std::size_t>(r * N + prepared_col(n))] =
            w->qweight[static_cast<std::size_t>(r * N + n)];
      }
    }
    QL_ASSIGN_OR_RETURN(src_q, cuda_host::upload(device, paired, DType::kI32));
  }
  QL_ASSIGN_OR_RETURN(prep->w, cuda_host::device_bytes(
                                   device, static_cast<std::size_t>(prep->tiles * wo_steps * 512)));
  QL_CUDA(launch::wo_repack(v.code, src_q.data_as<uint32_t>(), nullptr,
                            prep->act_order ? perm_dev.data_as<int32_t>() : nullptr, bits, K, N,
                            prep->tiles, wo_steps, prep->w.data_as<uint32_t>(), stream));
  QL_CUDA(cudaStreamSynchronize(stream));
  prep->perm = std::move(perm_dev);

  for (int n8 = 1; n8 <= 2; ++n8) {
    launch::GemvVariant probe = v;
    probe.n8 = n8;
    int blocks = 0;
    QL_CUDA(launch::int_gemv_occupancy(probe, kMaxWarps * 32, &blocks));
    if (blocks < 1) {
      return make_error(ErrorCode::kUnsupported, "{}: {} threads per block do not fit on {}",
                        kernel, kMaxWarps * 32, device.device().name);
    }
    prep->occupancy[n8 - 1] = blocks;
  }
  return std::unique_ptr<PreparedLinear>(std::move(prep));
}

}  // namespace qlinear
