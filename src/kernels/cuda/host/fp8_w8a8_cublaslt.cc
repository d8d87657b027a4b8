// Host code of cuda.fp8.cublaslt.sm89 (W8A8): the fused activation quantizer (fp8_act_quant.cu)
// writes e4m3 codes and scales into the workspace, then one cuBLASLt FP8 GEMM applies both scale
// sets in its epilogue:
//   per-tensor x per-tensor        SCALAR_32F x SCALAR_32F (the weights' rows share one scale)
//   per-token / per-tensor x rows  OUTER_VEC_32F x OUTER_VEC_32F (a per-tensor activation scale
//                                  is replicated over the rows by the quantizer)
//   1x128 x 128x128 blocks (sm90)  VEC128_32F x BLK128x128_32F (layouts in kBlockLayout below)
// The output goes straight to y with a bias epilogue where cuBLASLt offers one for the scale
// modes, else cuBLASLt writes f32 into the workspace and one kernel adds the bias and converts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/fp8_device.h"
#include "kernels/cuda/host/cuda_host.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime/cublaslt.h"
#include "kernels/cuda/runtime/cuda_check.h"

namespace qlinear {
namespace {

using cuda_host::DeviceCarver;
namespace launch = cuda_launch;

// cuBLASLt's block-scale layouts on sm90, as tests/device's probe_block_scale_layout() measured
// them on the H200 (2026-12-01; relative error 2.4e-4 vs 0.15-0.49 for the other three):
// activation (1x128) scales with M fastest ([K/128][M]), weight (128x128) scales with the K blocks
// fastest and that stride rounded up to a multiple of 4 ([N/128][round4(K/128)]), as PyTorch's
// _scaled_mm passes them. The TN form (weights as A) has algorithms from M = 4.
struct BlockLayout {
  bool act_m_fastest = true;
  bool weight_ld_round4 = true;
};
constexpr BlockLayout kBlockLayout{};

cudaDataType_t cuda_type(DType d) {
  return d == DType::kF32 ? CUDA_R_32F : (d == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F);
}

int64_t round4(int64_t v) { return (v + 3) / 4 * 4; }

// f32 elements of the staging buffer (rows of y cuBLASLt writes as f32 when y's rows are not
// 16-byte aligned, as FP8 GEMMs need): 16 MB, so many rows at a time.
constexpr int64_t kStagingFloats = int64_t{4} << 20;

class Fp8W8a8Prepared final : public PreparedLinear {
 public:
  Fp8W8a8Prepared(const LinearProblem& problem, Location location)
      : PreparedLinear(problem, location) {}

  std::size_t workspace_bytes(int64_t m) const override {
    DeviceCarver carver;
    Buffers b;
    carve(carver, m, b);
    return carver.bytes_needed();
  }
  bool capturable() const override { return true; }

  std::string kernel;
  ActQuant act = ActQuant::kDynamicToken;
  int64_t group_k = 0;
  float static_scale = 0.0f;
  bool block = false;
  bool outer_vec = true;
  bool has_direct = false;  // a plan writing y in its dtype (aligned rows)
  bool post_bias = false;   // f32 output: cuBLASLt's FP8 bias would be bf16; added after in f32
  Tensor weights;           // [N, K] e4m3
  Tensor weight_scale;      // [N] (outer vector or one scalar) or the block grid
  Tensor bias_f32;
  Tensor bias_d;  // bias in the output dtype (the direct plan's epilogue)
  cuda_blas::Gemm direct;
  cuda_blas::Gemm staged;  // f32 D, no epilogue
  void* default_stream = nullptr;

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const LinearProblem& p = problem();
    const int64_t M = x.rows();
    DeviceCarver carver(ctx.workspace);
    Buffers b;
    carve(carver, M, b);
    if (carver.overflowed()) return workspace_overflow(kernel);
    const cudaStream_t stream = cuda_host::run_stream(ctx, default_stream);
    if (block && M < 4) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: block-scaled cuBLASLt GEMMs need at least 4 rows, M = {}", kernel, M);
    }
    if (!block) {
      QL_RETURN_IF_ERROR(cuda_fp8::quantize(
          x.data(), cuda_host::usable_ld(M, x.ld(), p.K), p.act_dtype, M, p.K, act, static_scale,
          group_k, kBlockLayout.act_m_fastest, outer_vec, b.codes, b.scales, b.scratch, stream));
    }
    const int64_t ldy = cuda_host::usable_ld(M, y.ld(), p.N);
    const std::size_t elem = dtype_size(p.out_dtype);
    const bool aligned = reinterpret_cast<uintptr_t>(y.data()) % 16 == 0 &&
                         (static_cast<std::size_t>(ldy) * elem) % 16 == 0;
    cuda_blas::GemmOperands ops;
    ops.a = weights.data();
    ops.lda = p.K;
    ops.ldb = p.K;
    ops.a_scale = weight_scale.data();
    const int64_t ldx = cuda_host::usable_ld(M, x.ld(), p.K);
    // Block scaling: cuBLASLt's sm90 VEC128 x BLK128x128 GEMMs take row counts that are multiples
    // of 4 only (status 15 otherwise, tests/device at M = 65), so a ragged M runs as its first
    // M & ~3 rows plus the last 4 rows again (each GEMM's 1x128 scales quantized for its rows).
    auto block_gemm = [&](const cuda_blas::Gemm& gemm, int64_t row0, int64_t rows, void* d,
                          int64_t ldd) -> Status {
      QL_RETURN_IF_ERROR(cuda_fp8::quantize(
          static_cast<const std::byte*>(x.data()) + row0 * ldx * dtype_size(p.act_dtype), ldx,
          p.act_dtype, rows, p.K, act, static_scale, group_k, kBlockLayout.act_m_fastest, false,
          b.codes, b.scales, b.scratch, stream));
      ops.b = b.codes;
      ops.b_scale = b.scales;
      ops.d = d;
      ops.ldd = ldd;
      return gemm.run(rows, ops, b.blas, cuda_blas::kWorkspaceBytes, stream);
    };
    if (has_direct && aligned) {
      ops.b = b.codes;
      ops.b_scale = b.scales;
      ops.d = y.data();
      ops.ldd = ldy;
      ops.bias = post_bias ? nullptr : bias_d.data();
      if (block) {
        auto* y0 = static_cast<std::byte*>(y.data());
        QL_RETURN_IF_ERROR(block_gemm(direct, 0, M & ~int64_t{3}, y0, ldy));
        if (M % 4 != 0) {
          QL_RETURN_IF_ERROR(block_gemm(direct, M - 4, 4, y0 + (M - 4) * ldy * elem, ldy));
        }
      } else {
        QL_RETURN_IF_ERROR(direct.run(M, ops, b.blas, cuda_blas::kWorkspaceBytes, stream));
      }
      if (post_bias) {
        QL_CUDA(launch::bias_add_f32(static_cast<float*>(y.data()), M, p.N, ldy,
                                     bias_f32.data_as<float>(), stream));
      }
      return Status::ok_status();
    }
    // Rows of y through the f32 staging buffer, as many at a time as it holds.
    const int64_t rows = staging_rows(M);
    for (int64_t m0 = 0; m0 < M; m0 += rows) {
      int64_t start = m0;
      int64_t mr = std::min(rows, M - m0);
      if (block) {
        // 1x128 scales are [K/128, rows] for the GEMM's rows: each chunk is quantized on its own,
        // in multiples of 4 rows (a ragged last chunk moves back over rows already written).
        const int64_t mr4 = (mr + 3) & ~int64_t{3};
        start = std::min(m0, M - mr4);
        mr = mr4;
        QL_RETURN_IF_ERROR(block_gemm(staged, start, mr, b.staging, p.N));
      } else {
        ops.b = b.codes + m0 * p.K;
        ops.b_scale = outer_vec ? b.scales + m0 : b.scales;
        ops.d = b.staging;
        ops.ldd = p.N;
        QL_RETURN_IF_ERROR(staged.run(mr, ops, b.blas, cuda_blas::kWorkspaceBytes, stream));
      }
      QL_CUDA(launch::epilogue(b.staging, mr, p.N, bias_f32.data_as<float>(),
                               static_cast<std::byte*>(y.data()) + start * ldy * elem, ldy,
                               cuda_host::dtype_code(p.out_dtype), stream));
    }
    return Status::ok_status();
  }

 private:
  struct Buffers {
    void* blas = nullptr;
    uint8_t* codes = nullptr;
    float* scales = nullptr;
    float* scratch = nullptr;
    float* staging = nullptr;
  };
  int64_t staging_rows(int64_t m) const {
    // Block scaling needs at least 4 rows per GEMM (sm90 heuristic).
    const int64_t floor_rows = block ? 4 : 1;
    const int64_t rows =
        std::clamp<int64_t>(kStagingFloats / problem().N, floor_rows, std::max<int64_t>(m, 1));
    // Block chunks are multiples of 4 rows (see do_run).
    return block ? std::max<int64_t>(rows & ~int64_t{3}, 4) : rows;
  }
  void carve(DeviceCarver& carver, int64_t m, Buffers& b) const {
    const LinearProblem& p = problem();
    b.blas = carver.take<std::byte>(cuda_blas::kWorkspaceBytes);
    b.codes = carver.take<uint8_t>(static_cast<std::size_t>(m * p.K));
    const int64_t groups = act == ActQuant::kDynamicGroup ? (p.K + group_k - 1) / group_k : 1;
    b.scales = carver.take<float>(static_cast<std::size_t>(std::max<int64_t>(m * groups, m) + 1));
    b.scratch = carver.take<float>(
        static_cast<std::size_t>(std::max<int64_t>(cuda_fp8::quantize_scratch_floats(act, m), 1)));
    b.staging = carver.take<float>(static_cast<std::size_t>(staging_rows(m) * p.N));
  }
};

// The weights' block scales in cuBLASLt's BLK128x128 layout.
std::vector<float> block_scale_grid(const Fp8Weights& w, bool ld_round4) {
  const int64_t kb = (w.K + 127) / 128;
  const int64_t nb = (w.N + 127) / 128;
  const int64_t ld = ld_round4 ? round4(kb) : kb;
  std::vector<float> grid(static_cast<std::size_t>(nb * ld), 0.0f);
  for (int64_t n = 0; n < nb; ++n) {
    for (int64_t k = 0; k < kb; ++k) grid[n * ld + k] = w.scale[n * kb + k];
  }
  return grid;
}

}  // namespace

PreparedResult cuda_prepare_fp8_w8a8(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device) {
  QL_CUDA(cudaSetDevice(device.device().index));
  const cudaStream_t stream = static_cast<cudaStream_t>(device.default_stream());
  QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kernel));
  auto prep = std::make_unique<Fp8W8a8Prepared>(problem, device.location());
  prep->kernel = std::string(kernel);
  prep->default_stream = device.default_stream();
  prep->act = w8a8_act_quant(problem);
  prep->group_k = w8a8_act_group_k(problem);
  prep->static_scale = w->input_scale;
  prep->block = w->is_block();
  QL_ASSIGN_OR_RETURN(prep->weights, cuda_host::upload(device, w->qweight, DType::kU8));

  const bool act_tensor =
      prep->act == ActQuant::kDynamicTensor || prep->act == ActQuant::kStaticTensor;
  const bool rows_equal =
      !prep->block &&
      std::all_of(w->scale.begin(), w->scale.end(), [&](float s) { return s == w->scale.front(); });
  cuda_blas::GemmConfig config;
  config.a_type = CUDA_R_8F_E4M3;
  config.b_type = CUDA_R_8F_E4M3;
  config.compute = CUBLAS_COMPUTE_32F;
  if (prep->block) {
    prep->outer_vec = false;
    config.a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    config.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    QL_ASSIGN_OR_RETURN(
        prep->weight_scale,
        cuda_host::upload(device, block_scale_grid(*w, kBlockLayout.weight_ld_round4),
                          DType::kF32));
  } else if (act_tensor && rows_equal) {
    prep->outer_vec = false;
    config.a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    config.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    QL_ASSIGN_OR_RETURN(
        prep->weight_scale,
        cuda_host::upload(device, std::vector<float>{w->scale.front()}, DType::kF32));
  } else {
    prep->outer_vec = true;
    config.a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    config.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    QL_ASSIGN_OR_RETURN(prep->weight_scale, cuda_host::upload(device, w->scale, DType::kF32));
  }
  const bool has_bias = !w->bias.empty();
  if (has_bias) {
    QL_ASSIGN_OR_RETURN(prep->bias_f32, cuda_host::upload(device, w->bias, DType::kF32));
  }

  // Two plans: the direct one (y in its dtype, bias in cuBLASLt's epilogue except for f32
  // output, whose FP8 bias type would be bf16), and the f32 staging one for y rows that are not
  // 16-byte aligned (and for configurations without a direct algorithm).
  const int64_t m_max = problem.m_unbounded() ? 4096 : problem.m_max;
  prep->post_bias = has_bias && problem.out_dtype == DType::kF32;
  cuda_blas::GemmOperands probe;
  probe.a = prep->weights.data();
  probe.b = prep->weights.data();
  probe.d = prep->weights.data();
  probe.a_scale = prep->weight_scale.data();
  probe.b_scale = prep->weight_scale.data();
  {
    cuda_blas::GemmConfig c = config;
    c.d_type = cuda_type(problem.out_dtype);
    // (block scaling has no algorithm for M < 4 on sm90: tests/device's probe)
    c.bias = has_bias && !prep->post_bias;
    if (c.bias) {
      QL_ASSIGN_OR_RETURN(prep->bias_d,
                          Tensor::allocate(problem.out_dtype, {problem.N}, device.allocator()));
      QL_CUDA(launch::convert(prep->bias_f32.data(), launch::kF32, problem.N, prep->bias_d.data(),
                              cuda_host::dtype_code(problem.out_dtype), stream));
      QL_CUDA(cudaStreamSynchronize(stream));
      probe.bias = prep->bias_d.data();
    }
    Result<cuda_blas::Gemm> gemm = cuda_blas::Gemm::plan(device.device().index, c, problem.N,
                                                         problem.K, m_max, probe, problem.m_min);
    if (gemm.ok()) {
      prep->direct = std::move(gemm).value();
      prep->has_direct = true;
    }
  }
  cuda_blas::GemmConfig c = config;
  c.d_type = CUDA_R_32F;
  c.bias = false;
  probe.bias = nullptr;
  Result<cuda_blas::Gemm> staged = cuda_blas::Gemm::plan(device.device().index, c, problem.N,
                                                         problem.K, m_max, probe, problem.m_min);
  if (!staged.ok()) {
    return make_error(ErrorCode::kUnsupported, "{}: layer \"{}\": {}", kernel, weights.name,
                      staged.status().message());
  }
  prep->staged = std::move(staged).value();
  return std::unique_ptr<PreparedLinear>(std::move(prep));
}

namespace cuda_fp8 {

Result<std::string> probe_block_scale_layout(DeviceContext& device) {
  QL_CUDA(cudaSetDevice(device.device().index));
  const auto stream = static_cast<cudaStream_t>(device.default_stream());
  constexpr int64_t M = 64, N = 256, K = 384;
  constexpr int64_t kb = K / 128, nb = N / 128;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.5f, 2.0f);
  auto random_code = [&]() {
    uint8_t c;
    do {
      c = static_cast<uint8_t>(rng());
    } while ((c & 0x7F) == 0x7F || ((c >> 3) & 0xF) > 12);  // finite, |v| well below 448
    return c;
  };
  std::vector<uint8_t> a(M * K), w(N * K);
  for (auto& c : a) c = random_code();
  for (auto& c : w) c = random_code();
  std::vector<float> sa(M * kb), sw(nb * kb);  // [m][kb], [nb][kb]
  for (auto& v : sa) v = unit(rng);
  for (auto& v : sw) v = unit(rng);
  std::vector<double> ref(M * N, 0.0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        acc += static_cast<double>(f8e4m3_to_f32(a[m * K + k])) * sa[m * kb + k / 128] *
               f8e4m3_to_f32(w[n * K + k]) * sw[(n / 128) * kb + k / 128];
      }
      ref[m * N + n] = acc;
    }
  }
  QL_ASSIGN_OR_RETURN(Tensor da, cuda_host::upload(device, a, DType::kU8));
  QL_ASSIGN_OR_RETURN(Tensor dw, cuda_host::upload(device, w, DType::kU8));
  QL_ASSIGN_OR_RETURN(Tensor dd, Tensor::allocate(DType::kF32, {M, N}, device.allocator()));
  QL_ASSIGN_OR_RETURN(Tensor ws, cuda_host::device_bytes(device, cuda_blas::kWorkspaceBytes));
  std::string report;
  std::string match;
  // Orientation: weights as A (y^T = W x^T, D = y) or activations as A (D = y^T, col-major).
  for (int x_is_a = 0; x_is_a < 2; ++x_is_a) {
    for (cudaDataType_t d_type : {CUDA_R_16BF, CUDA_R_32F}) {
      cuda_blas::GemmConfig c;
      c.a_type = CUDA_R_8F_E4M3;
      c.b_type = CUDA_R_8F_E4M3;
      c.d_type = d_type;
      c.a_scale_mode = x_is_a ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                              : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      c.b_scale_mode = x_is_a ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                              : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      const int64_t rows = x_is_a ? M : N;  // D rows (cuBLASLt m)
      const int64_t cols = x_is_a ? N : M;  // D cols (cuBLASLt n)
      cuda_blas::GemmOperands ops;
      ops.a = x_is_a ? da.data() : dw.data();
      ops.b = x_is_a ? dw.data() : da.data();
      ops.lda = K;
      ops.ldb = K;
      ops.d = dd.data();
      ops.ldd = rows;
      ops.a_scale = dd.data();
      ops.b_scale = dd.data();
      std::string line = fmt::format("{} D={}: heuristic n=", x_is_a ? "x=A" : "W=A",
                                     d_type == CUDA_R_32F ? "f32" : "bf16");
      for (int64_t n : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{64}, int64_t{128}}) {
        const bool ok = cuda_blas::Gemm::plan_one(device.device().index, c, rows, K, n, ops).ok();
        line += fmt::format("{}:{} ", n, ok ? "ok" : "none");
      }
      Result<cuda_blas::Gemm> gemm =
          cuda_blas::Gemm::plan_one(device.device().index, c, rows, K, cols, ops);
      if (!gemm.ok()) {
        report += line + fmt::format("| full shape: {}\n", gemm.status().message());
        continue;
      }
      for (int act_m_fastest = 1; act_m_fastest >= 0; --act_m_fastest) {
        for (int round = 1; round >= 0; --round) {
          std::vector<float> sa_l(M * kb);
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t k = 0; k < kb; ++k) {
              sa_l[act_m_fastest ? k * M + m : m * kb + k] = sa[m * kb + k];
            }
          }
          const int64_t ld = round ? round4(kb) : kb;
          std::vector<float> sw_l(nb * ld, 0.0f);
          for (int64_t n = 0; n < nb; ++n) {
            for (int64_t k = 0; k < kb; ++k) sw_l[n * ld + k] = sw[n * kb + k];
          }
          QL_ASSIGN_OR_RETURN(Tensor dsa, cuda_host::upload(device, sa_l, DType::kF32));
          QL_ASSIGN_OR_RETURN(Tensor dsw, cuda_host::upload(device, sw_l, DType::kF32));
          ops.a_scale = x_is_a ? dsa.data() : dsw.data();
          ops.b_scale = x_is_a ? dsw.data() : dsa.data();
          QL_RETURN_IF_ERROR(device.fill(dd.data(), 0, 0x7FC07FC0u, M * N * 4));
          const Status run = gemm->run(cols, ops, ws.data(), cuda_blas::kWorkspaceBytes, stream);
          QL_CUDA(cudaStreamSynchronize(stream));
          const std::string name =
              fmt::format("{} D={} act={} weight-ld={}", x_is_a ? "x=A" : "W=A",
                          d_type == CUDA_R_32F ? "f32" : "bf16",
                          act_m_fastest ? "m-fastest" : "k-fastest", round ? "round4" : "exact");
          if (!run.ok()) {
            line += fmt::format("| {}: {} ", name, run.message());
            continue;
          }
          std::vector<float> out(M * N);
          if (d_type == CUDA_R_32F) {
            QL_RETURN_IF_ERROR(device.download(out.data(), dd.data(), 0, out.size() * 4));
          } else {
            std::vector<uint16_t> h(M * N);
            QL_RETURN_IF_ERROR(device.download(h.data(), dd.data(), 0, h.size() * 2));
            for (std::size_t i = 0; i < h.size(); ++i) out[i] = bf16_to_f32(h[i]);
          }
          double diff = 0.0, norm = 0.0;
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              const double v = x_is_a ? out[n * M + m] : out[m * N + n];
              diff += (v - ref[m * N + n]) * (v - ref[m * N + n]);
              norm += ref[m * N + n] * ref[m * N + n];
            }
          }
          const double rel = std::isfinite(diff) ? std::sqrt(diff / norm) : INFINITY;
          line += fmt::format("| {}: rel {:.3g} ", name, rel);
          if (rel < 1e-2 && match.empty()) match = name;
        }
      }
      report += line + "\n";
    }
  }
  if (match.empty()) {
    return make_error(ErrorCode::kUnsupported, "no block-scale configuration matched:\n{}", report);
  }
  return "match: " + match + "\n" + report;
}

}  // namespace cuda_fp8

}  // namespace qlinear
