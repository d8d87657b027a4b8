// opencl.blas.clblast | scheme: every canonical form — int w2/w4/w8 (groups, zero points,
//   act-order), fp8 W8A16 and W8A8 (all activation quantizations), dense f32/bf16/f16 — on any
//   OpenCL device (a f32/bf16/f16, o f32/bf16/f16); the OpenCL "blas" family, qlinear's analogue
//   of vLLM's portable torch backend
// after prepare: the canonical weights as they are (codes, scales, zero points, g_idx; FP8 codes
//   [N, K]; dense rows), each one buffer. A run converts x to f32 rows (W8A8: quantizes them by
//   activation_quant.h's contract and takes code * scale), then per tile of 256 columns
//   dequantizes the tile to f32 [256, K] in the workspace, multiplies with CLBlastSgemm into an
//   f32 tile and stores tile + bias in y's dtype (blas_clblast.cl). Weights stay quantized in
//   device memory; each run dequantizes them again (as cpu.*.blas does), so M = 1 is slow.
// limits: none on K, N or M; CLBlast (libclblast-dev) must be found at build time
// tested on: PoCL 3.1 (CPU device, AMD EPYC) with CLBlast 1.5.3 against the reference kernels in
//   the kernel grid
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/opencl/opencl_kernel.h"
#include "kernels/opencl/opencl_prepared.h"

#if defined(QLINEAR_WITH_OPENCL) && defined(QLINEAR_WITH_CLBLAST)
#include <clblast_c.h>
#endif

namespace qlinear {
namespace {

constexpr std::string_view kName = "opencl.blas.clblast";

#if defined(QLINEAR_WITH_OPENCL) && defined(QLINEAR_WITH_CLBLAST)
constexpr int64_t kTileN = 256;
constexpr const char* kFile = "blas_clblast.cl";

class PreparedClBlast final : public opencl::PreparedOnDevice {
 public:
  PreparedClBlast(const LinearProblem& problem, opencl::Context& device)
      : PreparedOnDevice(problem, device) {}

  Status load(const Canonical& c, const LinearProblem& problem) {
    K_ = static_cast<cl_int>(c.K());
    N_ = static_cast<cl_int>(c.N());
    QL_ASSIGN_OR_RETURN(rows_, device().kernel(kFile, "rows_to_f32"));
    QL_ASSIGN_OR_RETURN(epilogue_, device().kernel(kFile, "epilogue"));
    if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
      scheme_ = WeightScheme::kInt;
      int_ = {w->bits, w->group_size, w->zeros.empty() ? 0 : 1, w->g_idx.empty() ? 0 : 1};
      QL_ASSIGN_OR_RETURN(tile_, device().kernel(kFile, "int_tile"));
      QL_RETURN_IF_ERROR(upload(w->qweight, "qweight", weights_));
      QL_RETURN_IF_ERROR(upload(w->scales, "scales", scales_));
      QL_RETURN_IF_ERROR(upload(w->zeros, "zeros", zeros_));
      QL_RETURN_IF_ERROR(upload(w->g_idx, "g_idx", g_idx_));
      return upload_bias(w->bias);
    }
    if (const auto* w = std::get_if<Fp8Weights>(&c.weights)) {
      scheme_ = WeightScheme::kFp8;
      block_n_ = w->is_block() ? w->block_n : 0;
      block_k_ = w->is_block() ? w->block_k : 0;
      QL_ASSIGN_OR_RETURN(tile_, device().kernel(kFile, "fp8_tile"));
      if (problem.fp8_mode == Fp8Mode::kW8A8) {
        w8a8_ = true;
        QL_RETURN_IF_ERROR(quantizer_.load(device(), w8a8_act_quant(problem),
                                           w8a8_act_group_k(problem), w->input_scale, w->K));
        QL_ASSIGN_OR_RETURN(codes_, device().kernel(kFile, "codes_to_f32"));
      }
      QL_RETURN_IF_ERROR(upload(w->qweight, "qweight", weights_));
      QL_RETURN_IF_ERROR(upload(w->scale, "scales", scales_));
      return upload_bias(w->bias);
    }
    const auto& w = std::get<DenseWeights>(c.weights);
    scheme_ = WeightScheme::kDense;
    dense_dtype_ = opencl::dtype_code(w.dtype);
    QL_ASSIGN_OR_RETURN(tile_, device().kernel(kFile, "dense_tile"));
    QL_RETURN_IF_ERROR(upload(w.data, "weights", weights_));
    return upload_bias(w.bias);
  }

  std::size_t workspace_bytes(int64_t m) const override {
    opencl::WorkspaceOffsets sizing;
    (void)carve(sizing, m);
    return sizing.used();
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    opencl::WorkspaceOffsets carver(ctx.workspace);
    const Regions r = carve(carver, x.rows());
    if (carver.overflowed()) return workspace_overflow(kName);
    const opencl::ClView xv = opencl::cl_view(x);
    const opencl::ClView yv = opencl::cl_view(y);
    const cl_int M = static_cast<cl_int>(x.rows());
    const auto rows = static_cast<std::size_t>(M);
    const auto K = static_cast<std::size_t>(K_);
    const cl_mem ws = carver.buffer();
    cl_command_queue queue = opencl::queue_of(ctx, device());
    using opencl::arg;
    const std::lock_guard<std::mutex> lock(launch_mutex());
    if (w8a8_) {
      QL_RETURN_IF_ERROR(quantizer_.run(queue, xv, ws, r.act, M));
      const cl_int kind = quantizer_.kind_code(), group_k = quantizer_.group_k();
      QL_RETURN_IF_ERROR(opencl::launch(queue, codes_.get(), "codes_to_f32", {K, rows}, {0},
                                        {arg(ws), arg(r.act.codes), arg(r.act.scales), arg(r.xf),
                                         arg(kind), arg(group_k), arg(M), arg(K_)}));
    } else {
      QL_RETURN_IF_ERROR(opencl::launch(queue, rows_.get(), "rows_to_f32", {K, rows}, {0},
                                        {arg(xv.mem), arg(xv.offset), arg(xv.ld), arg(xv.dtype),
                                         arg(ws), arg(r.xf), arg(M), arg(K_)}));
    }
    const cl_mem w = weights_.get(), s = scales_.get(), z = zeros_.get(), g = g_idx_.get(),
                 b = bias_.get();
    for (int64_t n0 = 0; n0 < N_; n0 += kTileN) {
      const cl_int first = static_cast<cl_int>(n0);
      const cl_int width = static_cast<cl_int>(std::min<int64_t>(kTileN, N_ - n0));
      const auto cols = static_cast<std::size_t>(width);
      switch (scheme_) {
        case WeightScheme::kInt:
          QL_RETURN_IF_ERROR(
              opencl::launch(queue, tile_.get(), "int_tile", {K, cols}, {0},
                             {arg(w), arg(s), arg(z), arg(g), arg(ws), arg(r.wt), arg(K_), arg(N_),
                              arg(first), arg(width), arg(int_.bits), arg(int_.group_size),
                              arg(int_.has_zeros), arg(int_.has_g_idx)}));
          break;
        case WeightScheme::kFp8:
          QL_RETURN_IF_ERROR(
              opencl::launch(queue, tile_.get(), "fp8_tile", {K, cols}, {0},
                             {arg(w), arg(s), arg(ws), arg(r.wt), arg(K_), arg(N_), arg(first),
                              arg(width), arg(block_n_), arg(block_k_)}));
          break;
        case WeightScheme::kDense:
          QL_RETURN_IF_ERROR(opencl::launch(
              queue, tile_.get(), "dense_tile", {K, cols}, {0},
              {arg(w), arg(dense_dtype_), arg(ws), arg(r.wt), arg(K_), arg(first), arg(width)}));
          break;
      }
      // tile [M, width] = xf [M, K] * wt [width, K]^T (offsets and leading dimensions in floats).
      const CLBlastStatusCode status =
          CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, rows, cols,
                       K, 1.0f, ws, r.xf / sizeof(float), K, ws, r.wt / sizeof(float), K, 0.0f, ws,
                       r.yt / sizeof(float), cols, &queue, nullptr);
      if (status != CLBlastSuccess) {
        return make_error(ErrorCode::kInternal,
                          "{}: CLBlastSgemm (M={} N={} K={} at column {}) failed with CLBlast "
                          "status {}",
                          kName, M, width, K_, n0, static_cast<int>(status));
      }
      QL_RETURN_IF_ERROR(
          opencl::launch(queue, epilogue_.get(), "epilogue", {cols, rows}, {0},
                         {arg(ws), arg(r.yt), arg(width), arg(b), arg(has_bias_), arg(yv.mem),
                          arg(yv.offset), arg(yv.ld), arg(yv.dtype), arg(M), arg(first)}));
    }
    return Status::ok_status();
  }

 private:
  struct Regions {
    cl_ulong xf = 0, wt = 0, yt = 0;  // byte offsets into the workspace
    opencl::ActivationQuantizer::Regions act;
  };
  Regions carve(opencl::WorkspaceOffsets& c, int64_t M) const {
    Regions r;
    const int64_t tile = std::min<int64_t>(kTileN, N_);
    r.xf = c.take(sizeof(float) * static_cast<std::size_t>(std::max<int64_t>(M * K_, 1)));
    r.wt = c.take(sizeof(float) * static_cast<std::size_t>(tile * K_));
    r.yt = c.take(sizeof(float) * static_cast<std::size_t>(std::max<int64_t>(M * tile, 1)));
    if (w8a8_) r.act = quantizer_.carve(c, M);
    return r;
  }
  Status upload_bias(const std::vector<float>& bias) {
    has_bias_ = bias.empty() ? 0 : 1;
    return upload(bias, "bias", bias_);
  }

  struct IntShape {
    cl_int bits = 0, group_size = 0, has_zeros = 0, has_g_idx = 0;
  };
  WeightScheme scheme_ = WeightScheme::kInt;
  cl_int K_ = 0, N_ = 0, block_n_ = 0, block_k_ = 0, has_bias_ = 0, dense_dtype_ = 0;
  IntShape int_;
  bool w8a8_ = false;
  opencl::ActivationQuantizer quantizer_;
  opencl::KernelHandle rows_, codes_, tile_, epilogue_;
  opencl::BufferHandle weights_, scales_, zeros_, g_idx_, bias_;
};
#endif

class BlasClBlast final : public OpenClKernel {
 public:
  std::string_view name() const override { return kName; }
  Family family() const override { return Family::kBlas; }

 protected:
  Verdict requirements(const LinearProblem& p, const Device& /*device*/) const override {
    switch (p.scheme) {
      case WeightScheme::kInt:
        QL_REQUIRE(require_scheme(p, WeightScheme::kInt));
        if (p.bits != 2 && p.bits != 4 && p.bits != 8) {
          return Verdict::reject(Reason::kBits, fmt::format("bits={}; handles 2, 4, 8", p.bits));
        }
        if (p.group_size <= 0 || (!p.act_order && p.K % p.group_size != 0)) {
          return Verdict::reject(Reason::kGroupSize, fmt::format("group_size={} does not divide "
                                                                 "K={}",
                                                                 p.group_size, p.K));
        }
        if (p.K % (32 / p.bits) != 0) {
          return Verdict::reject(Reason::kAlignment,
                                 fmt::format("K={} not a multiple of {}", p.K, 32 / p.bits));
        }
        return require_io_dtypes(p);
      case WeightScheme::kFp8:
        return require_fp8_problem(p);
      case WeightScheme::kDense:
        return require_dense_problem(p);
    }
    return Verdict::accept();
  }
#if defined(QLINEAR_WITH_OPENCL) && defined(QLINEAR_WITH_CLBLAST)
  bool has_device_code() const override { return true; }
  Result<std::unique_ptr<PreparedLinear>> prepare_on_device(const Canonical& weights,
                                                            const LinearProblem& problem,
                                                            DeviceContext& device) const override {
    if (const auto* w = std::get_if<Fp8Weights>(&weights.weights)) {
      if (problem.fp8_mode == Fp8Mode::kW8A8 &&
          w8a8_act_quant(problem) == ActQuant::kStaticTensor &&
          !(w->input_scale > 0.0f && std::isfinite(w->input_scale))) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: layer \"{}\": static activation quantization needs input_scale > 0, "
                          "got {}",
                          kName, weights.name, w->input_scale);
      }
    }
    QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
    auto prepared = std::make_unique<PreparedClBlast>(problem, *context);
    QL_RETURN_IF_ERROR(prepared->load(weights, problem));
    return std::unique_ptr<PreparedLinear>(std::move(prepared));
  }
#endif
};

}  // namespace

const LinearKernel& kernel_opencl_blas_clblast() {
  static const BlasClBlast kernel;
  return kernel;
}

}  // namespace qlinear
