// One cuBLASLt GEMM shape as every CUDA kernel of qlinear issues it: y [M, N] = x [M, K] W^T with
// row-major x, W and y, which is cuBLASLt's column-major "TN" form D [N, M] = op_T(A [K, N]) B [K,
// M] (A = W, B = x, D = y; bias per row of D = per output column of y).
//
// plan() asks the heuristic once per M bucket (powers of two up to the layer's largest M) at
// prepare time; run() builds the descriptors on the stack (cublasLt*Init, no allocation) and issues
// one cublasLtMatmul with the bucket's algorithm, falling back to cuBLASLt's own choice when that
// algorithm refuses the call's leading dimensions. Nothing in run() allocates or synchronises,
// so a run can be captured in a CUDA graph.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace qlinear::cuda_blas {

// cuBLASLt scratch every qlinear GEMM may use (part of the caller's workspace).
inline constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// The handle of device `index` (created once, kept for the process).
Result<cublasLtHandle_t> handle(int index);

struct GemmConfig {
  cudaDataType_t a_type = CUDA_R_16BF;  // weights
  cudaDataType_t b_type = CUDA_R_16BF;  // activations
  cudaDataType_t d_type = CUDA_R_16BF;  // output
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool bias = false;      // EPILOGUE_BIAS (bias in bias_type, default d_type)
  int bias_type = -1;     // -1: cuBLASLt's default
  int a_scale_mode = -1;  // FP8: cublasLtMatmulMatrixScale_t of A (weights); -1: none
  int b_scale_mode = -1;  // FP8: of B (activations)
};

struct GemmOperands {
  const void* a = nullptr;  // W [N, K], row stride lda elements
  int64_t lda = 0;
  const void* b = nullptr;  // x [M, K], row stride ldb
  int64_t ldb = 0;
  void* d = nullptr;  // y [M, N], row stride ldd
  int64_t ldd = 0;
  const void* bias = nullptr;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
};

class Gemm {
 public:
  Gemm() = default;
  // Heuristics for M = powers of two from m_min's bucket up to m_max (capped at 65536) with dense
  // leading dimensions.
  // `probe` supplies aligned pointers of the real operands (the heuristic reads their alignment).
  // Errors name the configuration when cuBLASLt has no algorithm for it.
  static Result<Gemm> plan(int device, const GemmConfig& config, int64_t N, int64_t K,
                           int64_t m_max, const GemmOperands& probe, int64_t m_min = 1);
  // The heuristic for exactly M = m (one algorithm, used for every M).
  static Result<Gemm> plan_one(int device, const GemmConfig& config, int64_t N, int64_t K,
                               int64_t m, const GemmOperands& probe);

  Status run(int64_t M, const GemmOperands& ops, void* workspace, std::size_t workspace_bytes,
             cudaStream_t stream) const;

  const GemmConfig& config() const { return config_; }

 private:
  GemmConfig config_;
  cublasLtHandle_t handle_ = nullptr;
  int64_t N_ = 0;
  int64_t K_ = 0;
  std::vector<cublasLtMatmulAlgo_t> algos_;  // per log2 bucket, from first_bucket_
  int first_bucket_ = 0;
};

}  // namespace qlinear::cuda_blas
