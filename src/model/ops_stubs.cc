// make_cuda_ops / make_opencl_ops where a backend provides no decoder operations: an error that
// says what is missing. A backend that implements them defines QLINEAR_CUDA_DECODER_OPS or
// QLINEAR_OPENCL_DECODER_OPS (PUBLIC, from its CMakeLists) and these stubs step aside.
#include "kernels/device_context.h"
#include "model/ops.h"

namespace qlinear {

#if !defined(QLINEAR_CUDA_DECODER_OPS)
Result<std::unique_ptr<DecoderOps>> make_cuda_ops(DeviceContext& context) {
  return make_error(ErrorCode::kUnsupported,
                    "the decoder cannot run on {} yet: this build has no CUDA decoder operations "
                    "(embedding, norms, RoPE, attention; {}); its linear layers alone run "
                    "through `qlinear layer`, `verify` and `bench`",
                    context.device().describe(),
#if defined(QLINEAR_WITH_CUDA)
                    "the CUDA backend is built but has none"
#else
                    "built without QLINEAR_WITH_CUDA"
#endif
  );
}
#endif

#if !defined(QLINEAR_OPENCL_DECODER_OPS)
Result<std::unique_ptr<DecoderOps>> make_opencl_ops(DeviceContext& context) {
  return make_error(ErrorCode::kUnsupported,
                    "the decoder cannot run on {} yet: this build has no OpenCL decoder "
                    "operations ({}); its linear layers alone run through `qlinear layer`, "
                    "`verify` and `bench`",
                    context.device().describe(),
#if defined(QLINEAR_WITH_OPENCL)
                    "the OpenCL backend is built but has none"
#else
                    "built without QLINEAR_WITH_OPENCL"
#endif
  );
}
#endif

}  // namespace qlinear
