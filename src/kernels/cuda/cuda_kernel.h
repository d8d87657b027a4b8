// The CUDA backend's registry entries (see kernels/backend_kernel.h for how they answer
// selection in a build without QLINEAR_WITH_CUDA), and the device-code entry points their
// prepare_on_device() calls (defined in the .cu files, which are compiled only with the backend).
#pragma once

#include <memory>
#include <string_view>

#include "kernels/backend_kernel.h"

namespace qlinear {

// True when this binary contains the CUDA device code.
bool cuda_backend_compiled();

class CudaKernel : public BackendKernel {
 protected:
  const BackendInfo& backend() const final;
};

// The M crossover of the CUDA kernels (bench/results/h200.md): the weight-only mma kernels run
// M <= kCudaWoMmaMaxRows; above, the dequantized cuBLASLt GEMM (int, W8A16 FP8) and cuBLASLt FP8
// (W8A8) are faster, so W8A8 checkpoints run W8A16 below the crossover and W8A8 above it.
inline constexpr int64_t kCudaWoMmaMaxRows = 16;
// The decode buckets of cuda.int.gemv.sm80 (listed before the mma kernel): 4-bit codes M <= 16
// (the cp.async ring with two n8 tiles of x rows serves M 9-16: 1.05-1.45x the mma kernel's speed
// on six of seven decode shapes, H200, bench/results/h200-decode-2026-12-02d), 8-bit M <= 8 (the
// register pipelines' two-tile form lost to the mma kernel at M = 16 on 8192x57344 and 8192x10240:
// 2026-12-01, bench/results/h200.md).
inline constexpr int64_t kCudaGemvMaxRows = 16;
inline constexpr int64_t kCudaGemvMaxRows8 = 8;

// The device code families. `kernel` is the registry name (for error messages).
using PreparedResult = Result<std::unique_ptr<PreparedLinear>>;
// blas_cublaslt.cu: weights dequantized once to the activation dtype, one cuBLASLt GEMM per run.
PreparedResult cuda_prepare_blas(std::string_view kernel, const Canonical& weights,
                                 const LinearProblem& problem, DeviceContext& device);
// wo_mma.cu: weight-only int4 / int8 / e4m3 codes dequantized in registers, mma.sync.
PreparedResult cuda_prepare_wo_mma(std::string_view kernel, const Canonical& weights,
                                   const LinearProblem& problem, DeviceContext& device);
// int_gemv.cu: int4 / int8 codes dequantized in registers, y^T = W x^T on mma.sync (decode).
PreparedResult cuda_prepare_int_gemv(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device);
// fp8_w8a8_cublaslt.cu: the fused activation quantizer + a cuBLASLt FP8 GEMM.
PreparedResult cuda_prepare_fp8_w8a8(std::string_view kernel, const Canonical& weights,
                                     const LinearProblem& problem, DeviceContext& device);

// An entry whose device code is `kPrepare` (one of the four above; without CUDA they are stubs
// that BackendKernel never reaches, since has_device_code() is false there).
template <PreparedResult (*kPrepare)(std::string_view, const Canonical&, const LinearProblem&,
                                     DeviceContext&)>
class CudaDeviceKernel : public CudaKernel {
 protected:
  bool has_device_code() const override { return cuda_backend_compiled(); }
  PreparedResult prepare_on_device(const Canonical& weights, const LinearProblem& problem,
                                   DeviceContext& device) const override {
    return kPrepare(name(), weights, problem, device);
  }
};

}  // namespace qlinear
