// opencl.blas.clblast: the kernels around CLBlast's SGEMM. Per run: x to f32 rows (or, for W8A8,
// the quantized activations back to code * scale), then per tile of columns the canonical
// weights dequantized to f32 [width, K] in the workspace, SGEMM into an f32 [M, width] tile, and
// the epilogue adding the bias and storing in y's dtype. Workspace regions are byte offsets.

kernel void rows_to_f32(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                        global uchar* ws, ulong xf_at, int M, int K) {
  const int k = get_global_id(0);
  const int m = get_global_id(1);
  if (k >= K || m >= M) return;
  ((global float*)(ws + xf_at))[(ulong)m * K + k] =
      ql_load(x, x_off + (ulong)m * x_ld + k, x_dtype);
}

// act_kind: 0 per token, 1 per group of group_k columns, 2 per tensor (fp8_w8a8_portable.cl).
kernel void codes_to_f32(global uchar* ws, ulong codes_at, ulong scales_at, ulong xf_at,
                         int act_kind, int group_k, int M, int K) {
  const int k = get_global_id(0);
  const int m = get_global_id(1);
  if (k >= K || m >= M) return;
  const global float* scales = (const global float*)(ws + scales_at);
  const int groups = act_kind == 1 ? (K + group_k - 1) / group_k : 1;
  const float s = act_kind == 0   ? scales[m]
                  : act_kind == 1 ? scales[m * groups + k / group_k]
                                  : scales[0];
  ((global float*)(ws + xf_at))[(ulong)m * K + k] =
      ql_e4m3_to_f32((ws + codes_at)[(ulong)m * K + k]) * s;
}

// Columns n0 .. n0 + width - 1 of the canonical int weights as f32 rows [width, K].
kernel void int_tile(const global uint* qweight, const global float* scales,
                     const global uchar* zeros, const global int* g_idx, global uchar* ws,
                     ulong wt_at, int K, int N, int n0, int width, int bits, int group_size,
                     int has_zeros, int has_g_idx) {
  const int k = get_global_id(0);
  const int j = get_global_id(1);
  if (k >= K || j >= width) return;
  const int n = n0 + j;
  const int pack = 32 / bits;
  const uint code =
      (qweight[(ulong)(k / pack) * N + n] >> (bits * (k % pack))) & ((1u << bits) - 1u);
  const int g = has_g_idx ? g_idx[k] : k / group_size;
  const float z = has_zeros ? (float)zeros[(ulong)g * N + n] : (float)(1u << (bits - 1));
  ((global float*)(ws + wt_at))[(ulong)j * K + k] = ((float)code - z) * scales[(ulong)g * N + n];
}

// The same for e4m3fn weights [N, K] (canonical order) with per-row or block scales.
kernel void fp8_tile(const global uchar* qweight, const global float* scales, global uchar* ws,
                     ulong wt_at, int K, int N, int n0, int width, int block_n, int block_k) {
  const int k = get_global_id(0);
  const int j = get_global_id(1);
  if (k >= K || j >= width) return;
  const int n = n0 + j;
  const int k_blocks = block_k > 0 ? (K + block_k - 1) / block_k : 1;
  const float s = block_k > 0 ? scales[(n / block_n) * k_blocks + k / block_k] : scales[n];
  ((global float*)(ws + wt_at))[(ulong)j * K + k] = ql_e4m3_to_f32(qweight[(ulong)n * K + k]) * s;
}

// The same for dense weights [N, K] of f32, bf16 or f16.
kernel void dense_tile(const global uchar* weights, int w_dtype, global uchar* ws, ulong wt_at,
                       int K, int n0, int width) {
  const int k = get_global_id(0);
  const int j = get_global_id(1);
  if (k >= K || j >= width) return;
  ((global float*)(ws + wt_at))[(ulong)j * K + k] =
      ql_load(weights, (ulong)(n0 + j) * K + k, w_dtype);
}

// y[m, n0 + j] = tile[m, j] + bias[n0 + j] in y's dtype.
kernel void epilogue(global uchar* ws, ulong yt_at, int width, const global float* bias,
                     int has_bias, global uchar* y, ulong y_off, ulong y_ld, int y_dtype, int M,
                     int n0) {
  const int j = get_global_id(0);
  const int m = get_global_id(1);
  if (j >= width || m >= M) return;
  const float v = ((const global float*)(ws + yt_at))[(ulong)m * width + j];
  ql_store(y, y_off + (ulong)m * y_ld + n0 + j, y_dtype, v + (has_bias ? bias[n0 + j] : 0.0f));
}
