// make_decoder_ops: the DecoderOps of a device's platform (ops.h).
#include "kernels/device_context.h"
#include "model/ops.h"

namespace qlinear {

Status DecoderOps::sample(ConstMatrixView, ConstMatrixView, const SamplingOptions&, uint64_t,
                          MatrixView) {
  return make_error(ErrorCode::kUnsupported, "this backend does not sample on its device");
}

Result<std::unique_ptr<DecoderOps>> make_decoder_ops(DeviceContext& context, int threads) {
  switch (context.device().platform) {
    case Platform::kCpu:
      return make_cpu_ops(threads);
    case Platform::kCuda:
      return make_cuda_ops(context);
    case Platform::kOpenCl:
      return make_opencl_ops(context);
  }
  return make_error(ErrorCode::kUnsupported, "no decoder operations for device {}",
                    context.device().describe());
}

}  // namespace qlinear
