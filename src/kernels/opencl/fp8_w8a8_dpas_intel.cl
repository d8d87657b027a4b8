// opencl.fp8.w8a8.dpas.intel: W8A8 FP8 on Intel GPUs with XMX. The activations arrive quantized
// to e4m3fn in the workspace (the quantize kernels of fp8_w8a8_portable.cl, per token or per
// tensor). An 8-wide subgroup computes an 8 x 8 tile of y with
// intel_sub_group_f16_f16_matrix_mad_k16 (cl_intel_subgroup_matrix_multiply_accumulate): e4m3
// codes are exact in f16 and their products exact in the f32 accumulator, so
// y[m, n] = s_a(m) s_w(n) sum_k a_q w_q + bias. Weights are prepared as e4m3 code pairs tiled
// [N/8][K/2][8] u16 (pair = rows 2p, 2p+1 of a column, lower byte first), so a block read gives
// lane l its column's 8 next pairs.
//
// The body is compiled where the extension's macro is defined. Intel's compiler in Debian 12
// (IGC 1.0.12504) has the built-in for dg2 but declares it only when the macro is defined, and
// never defines it, so the host defines it (-Dcl_intel_subgroup_matrix_multiply_accumulate)
// when the device lists the extension.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#ifdef cl_intel_subgroup_matrix_multiply_accumulate

// Two e4m3 codes (lower byte first) as two f16 values packed in one int, lower K first.
inline int ql_e4m3_pair_to_half2(uint pair) {
  const half lo = convert_half(ql_e4m3_to_f32(pair & 0xFFu));
  const half hi = convert_half(ql_e4m3_to_f32((pair >> 8) & 0xFFu));
  return (int)(((uint)as_ushort(hi) << 16) | (uint)as_ushort(lo));
}

__attribute__((intel_reqd_sub_group_size(8))) kernel void fp8_w8a8_dpas(
    const global uchar* ws, ulong codes_at,  // [M, K] e4m3 activations
    ulong scales_at,                         // per row or one
    const global ushort* qweight,            // [N/8][K/2][8] code pairs
    const global float* scales,              // [N] per-row weight scale
    const global float* bias, global uchar* y, ulong y_off, ulong y_ld, int y_dtype, int M, int K,
    int N, int has_bias, int per_token) {
  const global uchar* codes = ws + codes_at;
  const global float* a_scales = (const global float*)(ws + scales_at);
  const int lane = (int)get_sub_group_local_id();
  const int tile = get_group_id(0);  // columns 8 * tile .. 8 * tile + 7
  const int n = 8 * tile + lane;
  const int m0 = get_group_id(1) * 8;
  float8 acc = (float8)(0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    // A: row m0 + j in element j; lane l holds columns k0 + 2l, k0 + 2l + 1.
    int8 a;
    for (int j = 0; j < 8; ++j) {
      const int m = m0 + j;
      const uint pair =
          m < M ? (uint)(*(const global ushort*)(codes + (ulong)m * K + k0 + 2 * lane)) : 0u;
      ((int*)&a)[j] = ql_e4m3_pair_to_half2(pair);
    }
    // B: K pair j in element j; lane l is column n.
    const ushort8 pairs =
        intel_sub_group_block_read_us8(qweight + ((ulong)tile * (K / 2) + k0 / 2) * 8);
    int8 b;
    for (int j = 0; j < 8; ++j) ((int*)&b)[j] = ql_e4m3_pair_to_half2(((ushort*)&pairs)[j]);
    acc = intel_sub_group_f16_f16_matrix_mad_k16(a, b, acc);
  }
  const float sw = scales[n];
  const float bn = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < 8; ++j) {
    const int m = m0 + j;
    if (m >= M) break;
    const float sa = per_token ? a_scales[m] : a_scales[0];
    ql_store(y, y_off + (ulong)m * y_ld + n, y_dtype, ((float*)&acc)[j] * sa * sw + bn);
  }
}

#elif defined(QL_REQUIRE_DPAS)
#error "cl_intel_subgroup_matrix_multiply_accumulate is not available on this target"
#endif  // cl_intel_subgroup_matrix_multiply_accumulate
