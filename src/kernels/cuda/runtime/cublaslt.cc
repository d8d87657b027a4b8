#include "kernels/cuda/runtime/cublaslt.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "kernels/cuda/runtime/cuda_check.h"

namespace qlinear::cuda_blas {
namespace {

int log2_bucket(int64_t m) {
  int b = 0;
  while ((int64_t{1} << b) < m) ++b;
  return b;
}

template <class T>
Status set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
                const char* what) {
  return cublas_status(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), what);
}

struct Descriptors {
  cublasLtMatmulDescOpaque_t op{};
  cublasLtMatrixLayoutOpaque_t a{};
  cublasLtMatrixLayoutOpaque_t b{};
  cublasLtMatrixLayoutOpaque_t d{};
};

Status init(Descriptors& s, const GemmConfig& c, int64_t M, int64_t N, int64_t K,
            const GemmOperands& ops) {
  QL_CUBLAS(cublasLtMatmulDescInit(&s.op, c.compute, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_TRANSA, trans_a, "TRANSA"));
  QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_TRANSB, trans_b, "TRANSB"));
  if (c.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE"));
    QL_RETURN_IF_ERROR(
        set_desc(&s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ops.bias, "BIAS_POINTER"));
    if (c.bias_type >= 0) {
      const int32_t type = c.bias_type;
      QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, type, "BIAS_TYPE"));
    }
  }
  if (c.a_scale_mode >= 0) {
    const int32_t mode = c.a_scale_mode;
    QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "A_SCALE_MODE"));
    QL_RETURN_IF_ERROR(
        set_desc(&s.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ops.a_scale, "A_SCALE_POINTER"));
  }
  if (c.b_scale_mode >= 0) {
    const int32_t mode = c.b_scale_mode;
    QL_RETURN_IF_ERROR(set_desc(&s.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "B_SCALE_MODE"));
    QL_RETURN_IF_ERROR(
        set_desc(&s.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, ops.b_scale, "B_SCALE_POINTER"));
  }
  QL_CUBLAS(cublasLtMatrixLayoutInit(&s.a, c.a_type, static_cast<uint64_t>(K),
                                     static_cast<uint64_t>(N), ops.lda));
  QL_CUBLAS(cublasLtMatrixLayoutInit(&s.b, c.b_type, static_cast<uint64_t>(K),
                                     static_cast<uint64_t>(M), ops.ldb));
  QL_CUBLAS(cublasLtMatrixLayoutInit(&s.d, c.d_type, static_cast<uint64_t>(N),
                                     static_cast<uint64_t>(M), ops.ldd));
  return Status::ok_status();
}

}  // namespace

Result<cublasLtHandle_t> handle(int index) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(index);
  if (it != handles.end()) return it->second;
  QL_CUDA(cudaSetDevice(index));
  cublasLtHandle_t h = nullptr;
  QL_CUBLAS(cublasLtCreate(&h));
  handles.emplace(index, h);
  return h;
}

namespace {
Result<Gemm> plan_buckets(int device, const GemmConfig& config, int64_t N, int64_t K,
                          const std::vector<int64_t>& ms, const GemmOperands& probe,
                          cublasLtHandle_t* handle_out, std::vector<cublasLtMatmulAlgo_t>* algos);
}  // namespace

Result<Gemm> Gemm::plan_one(int device, const GemmConfig& config, int64_t N, int64_t K, int64_t m,
                            const GemmOperands& probe) {
  Gemm gemm;
  gemm.config_ = config;
  gemm.N_ = N;
  gemm.K_ = K;
  QL_RETURN_IF_ERROR(
      plan_buckets(device, config, N, K, {m}, probe, &gemm.handle_, &gemm.algos_).status());
  return gemm;
}

Result<Gemm> Gemm::plan(int device, const GemmConfig& config, int64_t N, int64_t K, int64_t m_max,
                        const GemmOperands& probe, int64_t m_min) {
  Gemm gemm;
  gemm.config_ = config;
  gemm.N_ = N;
  gemm.K_ = K;
  std::vector<int64_t> ms;
  const int last = log2_bucket(std::clamp<int64_t>(m_max, 1, 65536));
  gemm.first_bucket_ = std::min(log2_bucket(std::max<int64_t>(m_min, 1)), last);
  for (int b = gemm.first_bucket_; b <= last; ++b) ms.push_back(int64_t{1} << b);
  QL_RETURN_IF_ERROR(
      plan_buckets(device, config, N, K, ms, probe, &gemm.handle_, &gemm.algos_).status());
  return gemm;
}

namespace {
Result<Gemm> plan_buckets(int device, const GemmConfig& config, int64_t N, int64_t K,
                          const std::vector<int64_t>& ms, const GemmOperands& probe,
                          cublasLtHandle_t* handle_out, std::vector<cublasLtMatmulAlgo_t>* algos) {
  QL_ASSIGN_OR_RETURN(*handle_out, handle(device));
  cublasLtMatmulPreferenceOpaque_t pref{};
  QL_CUBLAS(cublasLtMatmulPreferenceInit(&pref));
  const uint64_t ws = kWorkspaceBytes;
  QL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof(ws)));
  for (const int64_t M : ms) {
    GemmOperands ops = probe;
    ops.lda = K;
    ops.ldb = K;
    ops.ldd = N;
    Descriptors s;
    QL_RETURN_IF_ERROR(init(s, config, M, N, K, ops));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        *handle_out, &s.op, &s.a, &s.b, &s.d, &s.d, &pref, 1, &result, &returned);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
      return make_error(ErrorCode::kUnsupported,
                        "cuBLASLt has no algorithm for D[{}x{}] = W[{}x{}]^T x (A type {}, B type "
                        "{}, D type {}, bias {}, scale modes {}/{}): heuristic status {}, {} "
                        "results",
                        N, M, K, N, static_cast<int>(config.a_type),
                        static_cast<int>(config.b_type), static_cast<int>(config.d_type),
                        config.bias, config.a_scale_mode, config.b_scale_mode,
                        static_cast<int>(status), returned);
    }
    algos->push_back(result.algo);
  }
  return Gemm();
}
}  // namespace

Status Gemm::run(int64_t M, const GemmOperands& ops, void* workspace, std::size_t workspace_bytes,
                 cudaStream_t stream) const {
  Descriptors s;
  QL_RETURN_IF_ERROR(init(s, config_, M, N_, K_, ops));
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const std::size_t ws = std::min(workspace_bytes, kWorkspaceBytes);
  const int b =
      std::clamp<int>(log2_bucket(M) - first_bucket_, 0, static_cast<int>(algos_.size()) - 1);
  cublasStatus_t status =
      cublasLtMatmul(handle_, &s.op, &alpha, ops.a, &s.a, ops.b, &s.b, &beta, ops.d, &s.d, ops.d,
                     &s.d, algos_.empty() ? nullptr : &algos_[b], workspace, ws, stream);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
    // The bucket's algorithm refused this call's leading dimensions or alignment: let cuBLASLt
    // choose (a host-side heuristic, no allocation).
    status = cublasLtMatmul(handle_, &s.op, &alpha, ops.a, &s.a, ops.b, &s.b, &beta, ops.d, &s.d,
                            ops.d, &s.d, nullptr, workspace, ws, stream);
  }
  return cublas_status(status, fmt::format("cublasLtMatmul (M={} N={} K={})", M, N_, K_));
}

}  // namespace qlinear::cuda_blas
