// opencl.fp8.w8a16.portable: y[M, N] = x[M, K] (W_q * S_w)^T + bias for e4m3fn weights stored
// [K, N] (one byte per weight, column n of row k next to column n + 1, so neighbouring
// work-items read neighbouring bytes). Scales per row n (tensor and channel granularity) or per
// block_n x block_k block: s[(n / block_n) * k_blocks + k / block_k]. One work-item owns one
// column and QL_ROWS rows of x; f32 accumulation.
#define QL_ROWS 4

kernel void fp8_w8a16(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                      const global uchar* qweight,  // [K, N] e4m3fn
                      const global float* scales,   // [N], or [ceil(N/bn), ceil(K/bk)]
                      const global float* bias, global uchar* y, ulong y_off, ulong y_ld,
                      int y_dtype, int M, int K, int N, int block_n, int block_k, int has_bias) {
  const int n = get_global_id(0);
  const int m0 = get_global_id(1) * QL_ROWS;
  if (n >= N || m0 >= M) return;
  const int rows = min(QL_ROWS, M - m0);
  float acc[QL_ROWS];
  for (int j = 0; j < QL_ROWS; ++j) acc[j] = 0.0f;
  const int k_blocks = block_k > 0 ? (K + block_k - 1) / block_k : 1;
  for (int k = 0; k < K; ++k) {
    const float s = block_k > 0 ? scales[(n / block_n) * k_blocks + k / block_k] : scales[n];
    const float w = ql_e4m3_to_f32(qweight[(ulong)k * N + n]) * s;
    for (int j = 0; j < rows; ++j) {
      acc[j] += ql_load(x, x_off + (ulong)(m0 + j) * x_ld + k, x_dtype) * w;
    }
  }
  const float b = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < rows; ++j)
    ql_store(y, y_off + (ulong)(m0 + j) * y_ld + n, y_dtype, acc[j] + b);
}
