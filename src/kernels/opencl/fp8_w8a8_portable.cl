// opencl.fp8.w8a8.portable: W8A8 FP8. The activations are quantized to e4m3fn on the device by
// the contract of src/kernels/common/activation_quant.h, bit for bit (f32 arithmetic, the
// correctly rounded division and reciprocal, round to nearest even, saturation at 448), into the
// workspace, then y[m, n] = sum_k (a_q s_a(m, k)) (w_q s_w(n, k)) + bias in f32. Weights [K, N]
// e4m3fn with per-row or block scales as in fp8_w8a16_portable.cl. The workspace is one buffer;
// its regions are passed as byte offsets (multiples of 256).
#define QL_ROWS 4
#define QL_ACT_TOKEN 0   // one scale per row
#define QL_ACT_GROUP 1   // one scale per row and run of group_k columns (last one ragged)
#define QL_ACT_TENSOR 2  // one scale (dynamic: from the max over x; static: the checkpoint's)
#define QL_SCALE_FLOOR (1.0f / (448.0f * 512.0f))

// Dynamic per-token / per-group: one work-item per (group, row) computes the group's absmax,
// its scale s = max(amax / 448, floor) and codes RNE(clamp(x / s)).
kernel void quantize_groups(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                            global uchar* ws, ulong codes_at, ulong scales_at, int M, int K,
                            int group_k) {
  global uchar* codes = ws + codes_at;
  global float* scales = (global float*)(ws + scales_at);
  const int g = get_global_id(0);
  const int m = get_global_id(1);
  const int groups = (K + group_k - 1) / group_k;
  if (g >= groups || m >= M) return;
  const int k0 = g * group_k;
  const int k1 = min(K, k0 + group_k);
  const ulong row = x_off + (ulong)m * x_ld;
  float amax = 0.0f;
  for (int k = k0; k < k1; ++k) amax = fmax(amax, fabs(ql_load(x, row + k, x_dtype)));
  const float s = fmax(amax / 448.0f, QL_SCALE_FLOOR);
  scales[m * groups + g] = s;
  for (int k = k0; k < k1; ++k) {
    codes[(ulong)m * K + k] = (uchar)ql_f32_to_e4m3(ql_clamp448(ql_load(x, row + k, x_dtype) / s));
  }
}

// Dynamic per-tensor, step 1: the absmax of each row.
kernel void row_absmax(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                       global uchar* ws, ulong row_max_at, int M, int K) {
  global float* row_max = (global float*)(ws + row_max_at);
  const int m = get_global_id(0);
  if (m >= M) return;
  const ulong row = x_off + (ulong)m * x_ld;
  float amax = 0.0f;
  for (int k = 0; k < K; ++k) amax = fmax(amax, fabs(ql_load(x, row + k, x_dtype)));
  row_max[m] = amax;
}

// Per-tensor, step 2 (one work-item): the scale, dynamic from the row maxima or static.
kernel void tensor_scale(global uchar* ws, ulong row_max_at, ulong scales_at, int M, int dynamic,
                         float static_scale) {
  const global float* row_max = (const global float*)(ws + row_max_at);
  global float* scales = (global float*)(ws + scales_at);
  if (get_global_id(0) != 0) return;
  if (dynamic) {
    float amax = 0.0f;
    for (int m = 0; m < M; ++m) amax = fmax(amax, row_max[m]);
    scales[0] = fmax(amax / 448.0f, QL_SCALE_FLOOR);
  } else {
    scales[0] = static_scale;
  }
}

// Per-tensor, step 3: codes RNE(clamp(x * (1 / s))).
kernel void quantize_tensor(const global uchar* x, ulong x_off, ulong x_ld, int x_dtype,
                            global uchar* ws, ulong codes_at, ulong scales_at, int M, int K) {
  global uchar* codes = ws + codes_at;
  const global float* scales = (const global float*)(ws + scales_at);
  const int k = get_global_id(0);
  const int m = get_global_id(1);
  if (k >= K || m >= M) return;
  const float inv = 1.0f / scales[0];
  codes[(ulong)m * K + k] =
      (uchar)ql_f32_to_e4m3(ql_clamp448(ql_load(x, x_off + (ulong)m * x_ld + k, x_dtype) * inv));
}

kernel void fp8_w8a8(const global uchar* ws, ulong codes_at,  // [M, K] e4m3fn activations
                     ulong scales_at,                         // their scales, by act_kind
                     const global uchar* qweight,             // [K, N] e4m3fn
                     const global float* scales, const global float* bias, global uchar* y,
                     ulong y_off, ulong y_ld, int y_dtype, int M, int K, int N, int block_n,
                     int block_k, int has_bias, int act_kind, int group_k) {
  const global uchar* codes = ws + codes_at;
  const global float* a_scales = (const global float*)(ws + scales_at);
  const int n = get_global_id(0);
  const int m0 = get_global_id(1) * QL_ROWS;
  if (n >= N || m0 >= M) return;
  const int rows = min(QL_ROWS, M - m0);
  const int k_blocks = block_k > 0 ? (K + block_k - 1) / block_k : 1;
  const int a_groups = act_kind == QL_ACT_GROUP ? (K + group_k - 1) / group_k : 1;
  float acc[QL_ROWS];
  for (int j = 0; j < QL_ROWS; ++j) acc[j] = 0.0f;
  for (int k = 0; k < K; ++k) {
    const float s = block_k > 0 ? scales[(n / block_n) * k_blocks + k / block_k] : scales[n];
    const float w = ql_e4m3_to_f32(qweight[(ulong)k * N + n]) * s;
    for (int j = 0; j < rows; ++j) {
      const int m = m0 + j;
      const float sa = act_kind == QL_ACT_TOKEN   ? a_scales[m]
                       : act_kind == QL_ACT_GROUP ? a_scales[m * a_groups + k / group_k]
                                                  : a_scales[0];
      acc[j] += (ql_e4m3_to_f32(codes[(ulong)m * K + k]) * sa) * w;
    }
  }
  const float b = has_bias ? bias[n] : 0.0f;
  for (int j = 0; j < rows; ++j)
    ql_store(y, y_off + (ulong)(m0 + j) * y_ld + n, y_dtype, acc[j] + b);
}
