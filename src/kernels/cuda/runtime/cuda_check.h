// CUDA runtime and cuBLASLt status codes as qlinear Status values naming the call.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string_view>

#include "core/status.h"

namespace qlinear {

// ok for cudaSuccess; else "<call>: <cuda error string> (<error name>)".
Status cuda_status(cudaError_t error, std::string_view call);
Status cublas_status(cublasStatus_t status, std::string_view call);

}  // namespace qlinear

// Returns the Status of a failed CUDA runtime call from the enclosing function.
#define QL_CUDA(call) QL_RETURN_IF_ERROR(::qlinear::cuda_status((call), #call))
#define QL_CUBLAS(call) QL_RETURN_IF_ERROR(::qlinear::cublas_status((call), #call))
