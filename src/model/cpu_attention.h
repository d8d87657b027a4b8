// The CPU decoder's attention over one KV head (cpu_ops.cc `attention`): the query heads that share
// the KV head are scored together, so each key and value row is read and widened to f32 once for
// all of them (4 query heads per KV head in Llama 3 instead of once per head), and the dot products
// and value sums run on AVX-512 or AVX2 where the CPU has it. The arithmetic per query head is
// the same whatever the grouping, so prefill, decode and any thread count give the same bits on
// one machine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/vector_form.h"
#include "qlinear/dtype.h"

namespace qlinear::cpu_attention {

// One KV head's rows of one sequence: row p of the keys at k + p * k_stride bytes (the head's
// first element), the values likewise; FP8 rows scale by k_scale[p * scale_stride] (v likewise).
struct KvHead {
  const std::byte* k = nullptr;
  const std::byte* v = nullptr;
  int64_t k_stride = 0;
  int64_t v_stride = 0;
  DType dtype = DType::kF32;  // f32, bf16, f16 or f8_e4m3fn
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int64_t scale_stride = 0;
};

// The largest head_dim attend() takes.
inline constexpr int64_t kMaxHeadDim = 512;

// out[g * d .. + d) = softmax(q_g . K[first..last] * scale) V[first..last] for the `heads` query
// heads q_g = q + g * d (f32), accumulated in f32 with an online softmax over blocks of keys (as
// transformers' f32 softmax; never T^2 memory). `form`: the tile steps' SIMD form, one this CPU
// runs (cpu_runs; the decoder passes best_vector_form()).
void attend(const float* q, int64_t heads, int64_t d, const KvHead& kv, int64_t first, int64_t last,
            float scale, float* out, VectorForm form);

}  // namespace qlinear::cpu_attention
