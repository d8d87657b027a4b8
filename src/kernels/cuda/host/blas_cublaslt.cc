// Host code of the `blas` family on CUDA (cuda.int.blas.cublaslt, cuda.fp8.blas.cublaslt,
// cuda.dense.blas.cublaslt): prepare() dequantizes the canonical weights on the GPU once, to
// [N, K] in the activation dtype (bf16, f16; f32 for f32 activations), and run() is one cuBLASLt
// GEMM. The output goes straight to y with a bias epilogue where cuBLASLt supports the
// (activation, output) dtype pair (bf16 -> bf16/f32, f16 -> f16/f32, f32 -> f32); otherwise
// cuBLASLt writes f32 into the workspace and one epilogue kernel adds the bias and converts.
// f32 activations run as a true f32 GEMM (CUBLAS_COMPUTE_32F, no TF32).
#include <fmt/format.h>

#include <memory>

#include "kernels/common/kernel_io.h"
#include "kernels/common/workspace.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/host/cuda_host.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime/cublaslt.h"
#include "kernels/cuda/runtime/cuda_check.h"

namespace qlinear {
namespace {

using cuda_host::DeviceCarver;
namespace launch = cuda_launch;

cudaDataType_t cuda_type(DType d) {
  return d == DType::kF32 ? CUDA_R_32F : (d == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F);
}

// cuBLASLt writes this (activation, output) pair directly (with its bias epilogue).
bool direct_output(DType act, DType out) { return out == DType::kF32 || out == act; }

// Dequantizes `weights` into a new [N, K] device tensor of `dtype`.
Result<Tensor> dequantize_on_device(std::string_view kernel, const Canonical& weights, DType dtype,
                                    DeviceContext& device, cudaStream_t stream) {
  const int64_t K = weights.K();
  const int64_t N = weights.N();
  QL_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(dtype, {N, K}, device.allocator()));
  const int out_code = cuda_host::dtype_code(dtype);
  if (std::holds_alternative<IntWeights>(weights.weights)) {
    QL_ASSIGN_OR_RETURN(const IntWeights* w, int_weights_of(weights, kernel));
    QL_ASSIGN_OR_RETURN(Tensor qweight, cuda_host::upload(device, w->qweight, DType::kI32));
    QL_ASSIGN_OR_RETURN(Tensor scales, cuda_host::upload(device, w->scales, DType::kF32));
    QL_ASSIGN_OR_RETURN(Tensor zeros, cuda_host::upload(device, w->zeros, DType::kU8));
    QL_ASSIGN_OR_RETURN(Tensor g_idx, cuda_host::upload(device, w->g_idx, DType::kI32));
    QL_CUDA(launch::dequant_int(qweight.data_as<uint32_t>(), scales.data_as<float>(),
                                w->zeros.empty() ? nullptr : zeros.data_as<uint8_t>(),
                                w->g_idx.empty() ? nullptr : g_idx.data_as<int32_t>(), w->bits, K,
                                N, w->group_size, out.data(), out_code, stream));
    QL_CUDA(cudaStreamSynchronize(stream));
  } else if (std::holds_alternative<Fp8Weights>(weights.weights)) {
    QL_ASSIGN_OR_RETURN(const Fp8Weights* w, fp8_weights_of(weights, kernel));
    QL_ASSIGN_OR_RETURN(Tensor q, cuda_host::upload(device, w->qweight, DType::kU8));
    QL_ASSIGN_OR_RETURN(Tensor scale, cuda_host::upload(device, w->scale, DType::kF32));
    QL_CUDA(launch::dequant_fp8(q.data_as<uint8_t>(), scale.data_as<float>(), K, N,
                                w->is_block() ? w->block_n : 0, w->is_block() ? w->block_k : 0,
                                out.data(), out_code, stream));
    QL_CUDA(cudaStreamSynchronize(stream));
  } else {
    QL_ASSIGN_OR_RETURN(const DenseWeights* w, dense_weights_of(weights, kernel));
    QL_ASSIGN_OR_RETURN(Tensor raw, cuda_host::upload(device, w->data, DType::kU8));
    QL_CUDA(launch::convert(raw.data(), cuda_host::dtype_code(w->dtype), N * K, out.data(),
                            out_code, stream));
    QL_CUDA(cudaStreamSynchronize(stream));
  }
  return out;
}

const std::vector<float>& bias_of(const Canonical& weights) {
  return std::visit([](const auto& w) -> const std::vector<float>& { return w.bias; },
                    weights.weights);
}

class BlasPrepared final : public PreparedLinear {
 public:
  BlasPrepared(const LinearProblem& problem, Location location)
      : PreparedLinear(problem, location) {}

  std::size_t workspace_bytes(int64_t m) const override {
    DeviceCarver carver;
    carve(carver, m);
    return carver.bytes_needed();
  }
  bool capturable() const override { return true; }

  std::string kernel;
  Tensor weights;   // [N, K] in the GEMM's A type
  Tensor bias_d;    // bias in D's dtype (direct output with the epilogue)
  Tensor bias_f32;  // bias for the own epilogue
  bool direct = true;
  bool has_bias = false;
  cuda_blas::Gemm gemm;
  void* default_stream = nullptr;

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const LinearProblem& p = problem();
    const int64_t M = x.rows();
    DeviceCarver carver(ctx.workspace);
    float* staging = nullptr;
    void* blas_ws = carve(carver, M, &staging);
    if (carver.overflowed()) return workspace_overflow(kernel);
    const cudaStream_t stream = cuda_host::run_stream(ctx, default_stream);
    cuda_blas::GemmOperands ops;
    ops.a = weights.data();
    ops.lda = p.K;
    ops.b = x.data();
    ops.ldb = cuda_host::usable_ld(M, x.ld(), p.K);
    if (direct) {
      ops.d = y.data();
      ops.ldd = cuda_host::usable_ld(M, y.ld(), p.N);
      ops.bias = has_bias ? bias_d.data() : nullptr;
    } else {
      ops.d = staging;
      ops.ldd = p.N;
    }
    QL_RETURN_IF_ERROR(gemm.run(M, ops, blas_ws, cuda_blas::kWorkspaceBytes, stream));
    if (!direct) {
      QL_CUDA(launch::epilogue(staging, M, p.N, has_bias ? bias_f32.data_as<float>() : nullptr,
                               y.data(), cuda_host::usable_ld(M, y.ld(), p.N),
                               cuda_host::dtype_code(p.out_dtype), stream));
    }
    return Status::ok_status();
  }

 private:
  // [cuBLASLt workspace][f32 staging M x N when the output is not direct]
  void* carve(DeviceCarver& carver, int64_t m, float** staging = nullptr) const {
    void* ws = carver.take<std::byte>(cuda_blas::kWorkspaceBytes);
    float* s = direct ? nullptr : carver.take<float>(static_cast<std::size_t>(m * problem().N));
    if (staging != nullptr) *staging = s;
    return ws;
  }
};

}  // namespace

PreparedResult cuda_prepare_blas(std::string_view kernel, const Canonical& weights,
                                 const LinearProblem& problem, DeviceContext& device) {
  const cudaStream_t stream = static_cast<cudaStream_t>(device.default_stream());
  QL_CUDA(cudaSetDevice(device.device().index));
  auto prepared = std::make_unique<BlasPrepared>(problem, device.location());
  prepared->kernel = std::string(kernel);
  prepared->default_stream = device.default_stream();
  const DType act = problem.act_dtype;
  QL_ASSIGN_OR_RETURN(prepared->weights,
                      dequantize_on_device(kernel, weights, act, device, stream));
  const std::vector<float>& bias = bias_of(weights);
  prepared->has_bias = !bias.empty();
  prepared->direct = direct_output(act, problem.out_dtype);
  if (prepared->has_bias) {
    QL_ASSIGN_OR_RETURN(prepared->bias_f32, cuda_host::upload(device, bias, DType::kF32));
    const DType d_type = prepared->direct ? problem.out_dtype : DType::kF32;
    QL_ASSIGN_OR_RETURN(prepared->bias_d,
                        Tensor::allocate(d_type, {problem.N}, device.allocator()));
    QL_CUDA(launch::convert(prepared->bias_f32.data(), launch::kF32, problem.N,
                            prepared->bias_d.data(), cuda_host::dtype_code(d_type), stream));
    QL_CUDA(cudaStreamSynchronize(stream));
  }
  cuda_blas::GemmConfig config;
  config.a_type = cuda_type(act);
  config.b_type = cuda_type(act);
  config.d_type = prepared->direct ? cuda_type(problem.out_dtype) : CUDA_R_32F;
  config.compute = CUBLAS_COMPUTE_32F;
  config.bias = prepared->direct && prepared->has_bias;
  cuda_blas::GemmOperands probe;
  probe.a = prepared->weights.data();
  probe.b = prepared->weights.data();
  probe.d = prepared->weights.data();
  probe.bias = prepared->has_bias ? prepared->bias_d.data() : nullptr;
  const int64_t m_max = problem.m_unbounded() ? 4096 : problem.m_max;
  QL_ASSIGN_OR_RETURN(prepared->gemm, cuda_blas::Gemm::plan(device.device().index, config,
                                                            problem.N, problem.K, m_max, probe));
  return std::unique_ptr<PreparedLinear>(std::move(prepared));
}

}  // namespace qlinear
