// opencl.int.gemm.portable: y[M, N] = x[M, K] W^T + bias for the canonical int form (2/4/8-bit
// codes packed along K, groups or channelwise, zero points, act-order through g_idx). One
// work-item owns one output column n and QL_ROWS rows of x, so each weight is decoded once per
// QL_ROWS rows; the weight of row k is (code - zero[g]) * scale[g] with g = g_idx[k] (act-order,
// also a row-parallel shard's ragged groups) or k / group_size, accumulated in f32.
#define QL_ROWS 4

kernel void int_gemm(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                     const global uint* qweight,  // [K / pack, N]
                     const global float* scales,  // [groups, N]
                     const global uchar* zeros,   // [groups, N] (has_zeros)
                     const global int* g_idx,     // [K] (has_g_idx)
                     const global float* bias,    // [N] (has_bias)
                     global uchar* y, ulong y_off, ulong y_ld, int y_dtype, int M, int K, int N,
                     int bits, int group_size, int has_zeros, int has_g_idx, int has_bias) {
  const int n = get_global_id(0);
  const int m0 = get_global_id(1) * QL_ROWS;
  if (n >= N || m0 >= M) return;
  const int rows = min(QL_ROWS, M - m0);
  const int pack = 32 / bits;
  const uint mask = (1u << bits) - 1u;
  const float symmetric_zero = (float)(1u << (bits - 1));
  float acc[QL_ROWS];
  for (int j = 0; j < QL_ROWS; ++j) acc[j] = 0.0f;
  for (int r = 0; r < K / pack; ++r) {
    const uint word = qweight[(ulong)r * N + n];
    for (int i = 0; i < pack; ++i) {
      const int k = r * pack + i;
      const int g = has_g_idx ? g_idx[k] : k / group_size;
      const float s = scales[(ulong)g * N + n];
      const float z = has_zeros ? (float)zeros[(ulong)g * N + n] : symmetric_zero;
      const float w = ((float)((word >> (bits * i)) & mask) - z) * s;
      for (int j = 0; j < rows; ++j) {
        acc[j] += ql_load(x, x_off + (ulong)(m0 + j) * x_ld + k, x_dtype) * w;
      }
    }
  }
  const float b = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < rows; ++j)
    ql_store(y, y_off + (ulong)(m0 + j) * y_ld + n, y_dtype, acc[j] + b);
}
