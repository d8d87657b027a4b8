// Host code of the weight-only mma kernels (cuda.int.mma.sm80, cuda.fp8.w8a16.mma.sm80): the
// prepared layout (repacked on the GPU by wo_mma.cu's repack kernel), the per-call choice of the
// m16-tile variant and of the K split, and the launch. The layout and the kernel are described in
// wo_mma.cu.
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
using launch::kE4M3;
using launch::kU4;
using launch::kU8;
constexpr int64_t kBlockN = launch::kWoBlockN;
constexpr int64_t kChunk = launch::kWoChunk;

class WoMmaPrepared final : public PreparedLinear {
 public:
  WoMmaPrepared(const LinearProblem& problem, Location location)
      : PreparedLinear(problem, location) {}

  std::size_t workspace_bytes(int64_t m) const override {
    DeviceCarver carver;
    (void)carver.take<uint16_t>(static_cast<std::size_t>(m * Kpad));
    return carver.bytes_needed();
  }
  bool capturable() const override { return true; }

  std::string kernel;
  int code = kU4;
  bool bf16 = true;
  bool f16_scale = false;
  int64_t Npad = 0;
  int64_t Kpad = 0;
  int64_t steps = 0;
  int group_rows = 0;
  int groups = 1;
  int sym_zero = 8;
  bool has_zeros = false;
  bool act_order = false;
  int sm = 0;
  int sm_count = 1;
  launch::WoVariant variants[3];  // mt 1, 2, 4
  Tensor w, scales, zeros, perm, bias;
  void* default_stream = nullptr;

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const LinearProblem& p = problem();
    const int64_t M = x.rows();
    const cudaStream_t stream = cuda_host::run_stream(ctx, default_stream);
    DeviceCarver carver(ctx.workspace);
    void* staged = carver.take<uint16_t>(static_cast<std::size_t>(M * Kpad));
    if (carver.overflowed()) return workspace_overflow(kernel);

    launch::WoParams prm{};
    prm.w = w.data();
    prm.scales = scales.data();
    prm.zeros = has_zeros ? zeros.data_as<uint8_t>() : nullptr;
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
    prm.Npad = static_cast<int>(Npad);
    prm.K = static_cast<int>(p.K);
    prm.steps = static_cast<int>(steps);
    prm.chunks = static_cast<int>(Kpad / kChunk);
    prm.group_rows = group_rows;
    prm.groups = groups;
    prm.out_code = cuda_host::dtype_code(p.out_dtype);
    prm.sym_zero = sym_zero;
    // Scale rows shared by whole 32-row blocks of a 128-row chunk (a segment never straddles two
    // groups): 4 for groups of 128k rows and channelwise, 2 for 64, else 1.
    const int kbpg = group_rows / 32;
    prm.seg_kb = groups == 1 || kbpg % 4 == 0 ? 4 : (kbpg % 2 == 0 ? 2 : 1);
    prm.kb_shift = (kbpg & (kbpg - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(kbpg)) : -1;

    const launch::WoVariant& v = variants[M <= 16 ? 0 : (M <= 32 ? 1 : 2)];
    const int64_t m_blocks = (M + v.mt * 16 - 1) / (v.mt * 16);
    const int64_t tiles = Npad / kBlockN;
    prm.split = choose_split(tiles * m_blocks, v.occupancy, prm.chunks);
    return cuda_status(launch::wo_mma_launch(v, prm, static_cast<unsigned>(tiles),
                                             static_cast<unsigned>(m_blocks), stream),
                       kernel);
  }

 private:
  // The K split (cluster size) that fills the GPU best: the fraction of the last wave used,
  // slightly penalised per doubling (each split adds a reduction); 1 below sm90 (no clusters).
  int choose_split(int64_t units, int occupancy, int chunks) const {
    if (sm < 90) return 1;
    // QLINEAR_CUDA_WO_SPLIT=1|2|4|8|16 fixes the split (a tuning knob for measurements; 16 is a
    // non-portable cluster size).
    static const int forced = [] {
      const char* v = std::getenv("QLINEAR_CUDA_WO_SPLIT");
      return v != nullptr ? std::atoi(v) : 0;
    }();
    if (forced == 1 || forced == 2 || forced == 4 || forced == 8 ||
        forced == launch::kWoMaxForcedSplit) {
      return std::min(forced, chunks);
    }
    const double capacity = static_cast<double>(std::max(1, occupancy)) * sm_count;
    int best = 1;
    double best_score = -1.0;
    for (int s = 1; s <= launch::kWoMaxSplit && s <= chunks; s *= 2) {
      const double waves = static_cast<double>(units * s) / capacity;
      const double score = waves / std::ceil(waves) - 0.03 * std::log2(static_cast<double>(s));
      if (score > best_score + 1e-9) {
        best_score = score;
        best = s;
      }
    }
    return best;
  }
};

bool exact_f16(float v) {
  if (!std::isfinite(v)) return false;
  return f16_to_f32(f32_to_f16(v)) == v;
}

}  // namespace

PreparedResult cuda_prepare_wo_mma(std::string_view kernel, const Canonical& weights,
                                   const LinearProblem& problem, DeviceContext& device) {
  QL_CUDA(cudaSetDevice(device.device().index));
  const cudaStream_t stream = static_cast<cudaStream_t>(device.default_stream());
  auto prep = std::make_unique<WoMmaPrepared>(problem, device.location());
  prep->kernel = std::string(kernel);
  prep->default_stream = device.default_stream();
  prep->sm = device.device().sm;
  prep->sm_count = std::max(1, device.device().sm_count);
  prep->bf16 = problem.act_dtype == DType::kBF16;
  const int64_t K = problem.K;
  const int64_t N = problem.N;
  prep->Npad = (N + kBlockN - 1) / kBlockN * kBlockN;
  prep->Kpad = (K + kChunk - 1) / kChunk * kChunk;
  const int64_t Npad = prep->Npad;
  const int64_t tiles16 = Npad / 16;

  std::vector<float> table;  // [groups, Npad] scales
  std::vector<uint8_t> zeros;
  std::vector<float> bias;
  Tensor src_q, src_fp8, perm_dev;
  int bits = 0;
  if (problem.scheme == WeightScheme::kInt) {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kernel));
    bits = w->bits;
    prep->code = bits == 4 ? kU4 : kU8;
    prep->sym_zero = 1 << (bits - 1);
    prep->groups = static_cast<int>(w->num_groups);
    prep->group_rows = w->group_size;
    prep->has_zeros = !w->zeros.empty();
    prep->act_order = !w->g_idx.empty();
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
    table.assign(static_cast<std::size_t>(w->num_groups * Npad), 0.0f);
    if (prep->has_zeros) zeros.assign(table.size(), 0);
    for (int64_t g = 0; g < w->num_groups; ++g) {
      for (int64_t n = 0; n < N; ++n) {
        table[g * Npad + n] = w->scales[g * N + n];
        if (prep->has_zeros) zeros[g * Npad + n] = w->zeros[g * N + n];
      }
    }
    prep->f16_scale = std::all_of(w->scales.begin(), w->scales.end(), exact_f16);
    QL_ASSIGN_OR_RETURN(src_q, cuda_host::upload(device, w->qweight, DType::kI32));
    bias = w->bias;
  } else {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kernel));
    prep->code = kE4M3;
    if (w->is_block()) {
      prep->group_rows = w->block_k;
      prep->groups = static_cast<int>((K + w->block_k - 1) / w->block_k);
    } else {
      prep->group_rows = static_cast<int>(prep->Kpad);
      prep->groups = 1;
    }
    table.assign(static_cast<std::size_t>(prep->groups * Npad), 0.0f);
    for (int64_t g = 0; g < prep->groups; ++g) {
      for (int64_t n = 0; n < N; ++n) {
        const float s = w->is_block() ? w->scale[(n / w->block_n) * prep->groups + g] : w->scale[n];
        table[g * Npad + n] = s * 256.0f;  // the bit-field decode gives code * 2^-8
      }
    }
    prep->f16_scale = false;
    QL_ASSIGN_OR_RETURN(src_fp8, cuda_host::upload(device, w->qweight, DType::kU8));
    bias = w->bias;
  }
  prep->steps = prep->Kpad / launch::wo_step_rows(prep->code);

  // Codes into the fragment order.
  QL_ASSIGN_OR_RETURN(prep->w, cuda_host::device_bytes(
                                   device, static_cast<std::size_t>(tiles16 * prep->steps * 512)));
  QL_CUDA(launch::wo_repack(prep->code, src_q.data_as<uint32_t>(), src_fp8.data_as<uint8_t>(),
                            prep->act_order ? perm_dev.data_as<int32_t>() : nullptr, bits, K, N,
                            tiles16, prep->steps, prep->w.data_as<uint32_t>(), stream));
  QL_CUDA(cudaStreamSynchronize(stream));
  if (prep->f16_scale) {
    std::vector<uint16_t> half(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) half[i] = f32_to_f16(table[i]);
    QL_ASSIGN_OR_RETURN(prep->scales, cuda_host::upload(device, half, DType::kF16));
  } else {
    QL_ASSIGN_OR_RETURN(prep->scales, cuda_host::upload(device, table, DType::kF32));
  }
  if (prep->has_zeros) {
    QL_ASSIGN_OR_RETURN(prep->zeros, cuda_host::upload(device, zeros, DType::kU8));
  }
  if (!bias.empty()) {
    QL_ASSIGN_OR_RETURN(prep->bias, cuda_host::upload(device, bias, DType::kF32));
  }
  prep->perm = std::move(perm_dev);

  const int mts[3] = {1, 2, 4};
  for (int i = 0; i < 3; ++i) {
    launch::WoVariant v;
    v.code = prep->code;
    v.bf16 = prep->bf16;
    v.f16_scale = prep->f16_scale;
    v.mt = mts[i];
    QL_CUDA(launch::wo_mma_setup(v));
    if (v.occupancy < 1) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: the m{} variant does not fit on {} ({} bytes of shared memory)",
                        kernel, mts[i] * 16, device.device().name, v.smem);
    }
    prep->variants[i] = v;
  }
  return std::unique_ptr<PreparedLinear>(std::move(prep));
}

}  // namespace qlinear
