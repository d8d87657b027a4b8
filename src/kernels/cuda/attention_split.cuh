// Device helpers of the two decoder attention kernels (decoder_attention.cu per query head,
// decoder_attention_group.cu per query group): warp butterflies and the weights of a split row's
// parts in the merge.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/launch.h"

namespace qlinear::cuda_device {

// The butterflies leave every lane the same result, in a fixed order (deterministic merges).
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  }
  return v;
}

// Called by every lane of one warp for one (row, head) whose `used` parts' partials
// [max, sum, accumulator...] lie `stride` floats apart from `all`: writes each part's weight
// exp(m_q - max) to weight[q] (-1 for a part whose max is -inf: left out) and returns
// 1 / sum_q l_q w_q. Lane q loads parts q and q + 32, their loads in flight together.
__device__ __forceinline__ float split_part_weights(const float* all, int64_t stride, int used,
                                                    int lane, float* weight) {
  static_assert(cuda_launch::kDecoderMaxSplits <= 64, "two parts per lane");
  float mq[2];
  float lq[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = lane + 32 * r;
    mq[r] = q < used ? __ldcg(all + q * stride) : -INFINITY;
    lq[r] = q < used ? __ldcg(all + q * stride + 1) : 0.0f;
  }
  const float big = warp_max(fmaxf(mq[0], mq[1]));
  float mine_sum = 0.0f;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float w = mq[r] == -INFINITY ? -1.0f : expf(mq[r] - big);
    if (w != -1.0f) mine_sum += lq[r] * w;
    if (lane + 32 * r < cuda_launch::kDecoderMaxSplits) weight[lane + 32 * r] = w;
  }
  return 1.0f / warp_sum(mine_sum);
}

}  // namespace qlinear::cuda_device
