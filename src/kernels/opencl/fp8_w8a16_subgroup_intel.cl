// opencl.fp8.w8a16.subgroup.intel: W8A16 FP8 on Intel GPUs. Weights are packed [K/4, N] u32
// (the 4 codes of rows 4r..4r+3 of column n in one word, lowest byte first), so one
// cl_intel_subgroups block read gives each of the 16 lanes of a subgroup its column's next four
// codes. Per-row or block scales as in fp8_w8a16_portable.cl; f32 accumulation of QL_ROWS rows.
#define QL_ROWS 4

__attribute__((intel_reqd_sub_group_size(16))) kernel void fp8_w8a16_subgroup(
    const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
    const global uint* qweight,  // [K / 4, N], N % 16 == 0
    const global float* scales, const global float* bias, global uchar* y, ulong y_off, ulong y_ld,
    int y_dtype, int M, int K, int N, int block_n, int block_k, int has_bias) {
  const int n = get_global_id(0);
  const int n0 = n - (int)get_sub_group_local_id();
  const int m0 = get_global_id(1) * QL_ROWS;
  if (m0 >= M) return;
  const int rows = min(QL_ROWS, M - m0);
  const int k_blocks = block_k > 0 ? (K + block_k - 1) / block_k : 1;
  float acc[QL_ROWS];
  for (int j = 0; j < QL_ROWS; ++j) acc[j] = 0.0f;
  for (int r = 0; r < K / 4; ++r) {
    const uint word = intel_sub_group_block_read(qweight + (ulong)r * N + n0);
    for (int i = 0; i < 4; ++i) {
      const int k = 4 * r + i;
      const float s = block_k > 0 ? scales[(n / block_n) * k_blocks + k / block_k] : scales[n];
      const float w = ql_e4m3_to_f32((word >> (8 * i)) & 0xFFu) * s;
      for (int j = 0; j < rows; ++j) {
        acc[j] = fma(ql_load(x, x_off + (ulong)(m0 + j) * x_ld + k, x_dtype), w, acc[j]);
      }
    }
  }
  const float b = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < rows; ++j)
    ql_store(y, y_off + (ulong)(m0 + j) * y_ld + n, y_dtype, acc[j] + b);
}
