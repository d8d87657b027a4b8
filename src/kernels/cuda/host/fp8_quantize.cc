// The Status-returning front of the fused FP8 activation quantizer (fp8_act_quant.cu).
#include <fmt/format.h>

#include "kernels/common/activation_quant.h"
#include "kernels/cuda/fp8_device.h"
#include "kernels/cuda/host/cuda_host.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime/cuda_check.h"

namespace qlinear::cuda_fp8 {

static_assert(cuda_launch::kFp8ActScaleFloor == kFp8ActScaleFloor,
              "the device quantizer's scale floor is the contract's");

int64_t quantize_scratch_floats(ActQuant kind, int64_t M) {
  return kind == ActQuant::kDynamicTensor ? M : 0;
}

Status quantize(const void* x, int64_t ldx, DType dtype, int64_t M, int64_t K, ActQuant kind,
                float static_scale, int64_t group_k, bool group_major, bool replicate,
                uint8_t* codes, float* scales, float* scratch, void* stream) {
  int k = 0;
  switch (kind) {
    case ActQuant::kDynamicToken:
      k = cuda_launch::kActToken;
      break;
    case ActQuant::kDynamicTensor:
      k = cuda_launch::kActTensor;
      break;
    case ActQuant::kStaticTensor:
      k = cuda_launch::kActStatic;
      break;
    case ActQuant::kDynamicGroup:
      k = cuda_launch::kActGroup;
      break;
    case ActQuant::kNone:
      return make_error(ErrorCode::kInvalidArgument,
                        "cuda fp8 quantize: activation quantization \"none\" quantizes nothing");
  }
  if (kind == ActQuant::kDynamicGroup && group_k <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "cuda fp8 quantize: group_k={} must be > 0",
                      group_k);
  }
  return cuda_status(cuda_launch::fp8_quantize(x, ldx, cuda_host::dtype_code(dtype), M, K, k,
                                               static_scale, group_k, group_major, replicate, codes,
                                               scales, scratch, static_cast<cudaStream_t>(stream)),
                     "cuda fp8 activation quantizer");
}

}  // namespace qlinear::cuda_fp8
