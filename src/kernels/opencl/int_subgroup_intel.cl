// opencl.int.subgroup.intel: the canonical int form (4/8-bit) on Intel GPUs. A work-group is one
// 16-wide subgroup owning 16 neighbouring output columns; each lane one column. The packed words
// of a K step and the f32 scales of a group are read for all 16 columns with one
// cl_intel_subgroups block read each (the canonical [K/pack, N] layout keeps them contiguous);
// each lane decodes its column's codes, (code - zero) * scale, and accumulates QL_ROWS rows of x
// in f32. Act-order and ragged groups through g_idx as in int_gemm_portable.cl.
#define QL_ROWS 4

__attribute__((intel_reqd_sub_group_size(16))) kernel void int_subgroup(
    const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
    const global uint* qweight,  // [K / pack, N], N % 16 == 0
    const global float* scales,  // [groups, N]
    const global uchar* zeros,   // [groups, N] (has_zeros)
    const global int* g_idx,     // [K] (has_g_idx)
    const global float* bias,    // [N] (has_bias)
    global uchar* y, ulong y_off, ulong y_ld, int y_dtype, int M, int K, int N, int bits,
    int group_size, int has_zeros, int has_g_idx, int has_bias) {
  const int n = get_global_id(0);
  const int n0 = n - (int)get_sub_group_local_id();
  const int m0 = get_global_id(1) * QL_ROWS;
  if (m0 >= M) return;  // uniform over the subgroup
  const int rows = min(QL_ROWS, M - m0);
  const int pack = 32 / bits;
  const uint mask = (1u << bits) - 1u;
  const float symmetric_zero = (float)(1u << (bits - 1));
  float acc[QL_ROWS];
  for (int j = 0; j < QL_ROWS; ++j) acc[j] = 0.0f;
  int cached_group = -1;
  float s = 0.0f;
  float z = symmetric_zero;
  for (int r = 0; r < K / pack; ++r) {
    const uint word = intel_sub_group_block_read(qweight + (ulong)r * N + n0);
    for (int i = 0; i < pack; ++i) {
      const int k = r * pack + i;
      const int g = has_g_idx ? g_idx[k] : k / group_size;
      if (g != cached_group) {  // uniform: every lane reads the same row k
        cached_group = g;
        s = as_float(intel_sub_group_block_read((const global uint*)(scales + (ulong)g * N + n0)));
        if (has_zeros) z = (float)zeros[(ulong)g * N + n];
      }
      const float w = ((float)((word >> (bits * i)) & mask) - z) * s;
      for (int j = 0; j < rows; ++j) {
        acc[j] = fma(ql_load(x, x_off + (ulong)(m0 + j) * x_ld + k, x_dtype), w, acc[j]);
      }
    }
  }
  const float b = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < rows; ++j)
    ql_store(y, y_off + (ulong)(m0 + j) * y_ld + n, y_dtype, acc[j] + b);
}
