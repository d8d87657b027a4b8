// RoPE's rotation of one pair (transformers' rotate_half convention), shared by the decoder's
// rope kernels (decoder_ops.cu) and the FP8 KV store (decoder_kv_fp8.cu) so that both rotate bit
// for bit as the CPU ops do: no FMA contraction (the _rn intrinsics).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace qlinear::cuda_device {

// (a, b) = (x[i], x[i + half]) rotated by position p's angle of pair i (f32 [positions, half]
// cos / sin tables).
__device__ __forceinline__ void rotate_pair(float& a, float& b, cuda_launch::DecoderMatrix cos,
                                            cuda_launch::DecoderMatrix sin, int32_t p, int64_t i) {
  const float c = static_cast<const float*>(cos.data)[p * cos.ld + i];
  const float s = static_cast<const float*>(sin.data)[p * sin.ld + i];
  const float a0 = a;
  a = __fsub_rn(__fmul_rn(a0, c), __fmul_rn(b, s));
  b = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a0, s));
}

}  // namespace qlinear::cuda_device
