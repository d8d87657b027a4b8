// The decoder's operations besides its linear layers (src/model/ops.h) on OpenCL memory, for
// make_opencl_ops (src/kernels/opencl/ops/opencl_ops.cc). Views are (buffer, element offset,
// leading dimension, dtype); activations f32 unless a dtype argument says otherwise. Norms and
// softmax accumulate in f32 (the CPU ops use double for the norms' sums: they agree to ~1e-6).
// Index views (ids, positions) are i32 buffers; an index outside its range writes NaN (embed,
// attention) or nothing (rope, store_kv) rather than reading out of bounds.

#define QL_NORM_LANES 64  // work-group size of the row reductions

// out[t, :] = table[ids[t], :] as f32.
kernel void embed(const global uchar* table, ulong t_off, ulong t_ld, int t_dtype, long vocab,
                  const global int* ids, ulong ids_off, global float* out, ulong o_off, ulong o_ld,
                  int H, int T) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  if (i >= H || t >= T) return;
  const int id = ids[ids_off + t];
  out[o_off + (ulong)t * o_ld + i] =
      (id < 0 || id >= vocab) ? NAN : ql_load(table, t_off + (ulong)id * t_ld + i, t_dtype);
}

// The inverse RMS of `n` f32 values from `row`, `stride` apart, over one work-group.
inline float ql_inverse_rms(const global float* row, int n, float eps, local float* partial) {
  const int lane = get_local_id(0);
  float sum = 0.0f;
  for (int i = lane; i < n; i += QL_NORM_LANES) sum += row[i] * row[i];
  partial[lane] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int half_width = QL_NORM_LANES / 2; half_width > 0; half_width /= 2) {
    if (lane < half_width) partial[lane] += partial[lane + half_width];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float inv = 1.0f / sqrt(partial[0] / (float)n + eps);
  barrier(CLK_LOCAL_MEM_FENCE);  // partial is reused by the caller's next row
  return inv;
}

// One work-group per row: out = x * rsqrt(mean(x^2) + eps) * weight in out's dtype.
kernel void rms_norm(const global float* x, ulong x_off, ulong x_ld, const global float* weight,
                     ulong w_off, float eps, global uchar* out, ulong o_off, ulong o_ld,
                     int o_dtype, int n) {
  local float partial[QL_NORM_LANES];
  const int t = get_group_id(0);
  const global float* row = x + x_off + (ulong)t * x_ld;
  const float inv = ql_inverse_rms(row, n, eps, partial);
  for (int i = get_local_id(0); i < n; i += QL_NORM_LANES) {
    ql_store(out, o_off + (ulong)t * o_ld + i, o_dtype, weight[w_off + i] * (row[i] * inv));
  }
}

// In place, one work-group per (head, row): RMSNorm over head_dim columns.
kernel void head_rms_norm(global float* x, ulong x_off, ulong x_ld, int head_dim,
                          const global float* weight, ulong w_off, float eps) {
  local float partial[QL_NORM_LANES];
  const int h = get_group_id(0);
  const int t = get_group_id(1);
  global float* v = x + x_off + (ulong)t * x_ld + (ulong)h * head_dim;
  const float inv = ql_inverse_rms(v, head_dim, eps, partial);
  for (int i = get_local_id(0); i < head_dim; i += QL_NORM_LANES) {
    v[i] = weight[w_off + i] * (v[i] * inv);
  }
}

// In place: rotate pairs (i, i + half) of every head by row t's position (rotate_half).
kernel void rope(global float* x, ulong x_off, ulong x_ld, int head_dim, int heads,
                 const global int* positions, ulong p_off, const global float* cos_table,
                 ulong c_off, ulong c_ld, const global float* sin_table, ulong s_off, ulong s_ld,
                 int table_positions, int T) {
  const int half_dim = head_dim / 2;
  const int i = get_global_id(0);
  const int h = get_global_id(1);
  const int t = get_global_id(2);
  if (i >= half_dim || h >= heads || t >= T) return;
  const int p = positions[p_off + t];
  if (p < 0 || p >= table_positions) return;
  const float c = cos_table[c_off + (ulong)p * c_ld + i];
  const float s = sin_table[s_off + (ulong)p * s_ld + i];
  global float* v = x + x_off + (ulong)t * x_ld + (ulong)h * head_dim;
  const float a = v[i];
  const float b = v[i + half_dim];
  v[i] = a * c - b * s;
  v[i + half_dim] = b * c + a * s;
}

// Row t of src (f32/bf16/f16) into position positions[t] of row t's sequence of dst
// (f32/bf16/f16): rows (t / seq_rows) * capacity + position (seq_rows 0: one sequence).
kernel void store_rows(const global uchar* src, ulong s_off, ulong s_ld, int s_dtype,
                       const global int* positions, ulong p_off, global uchar* dst, ulong d_off,
                       ulong d_ld, int d_dtype, int capacity, int width, int T, int seq_rows) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  if (i >= width || t >= T) return;
  const int p = positions[p_off + t];
  if (p < 0 || p >= capacity) return;
  const ulong row = (ulong)(seq_rows > 0 ? t / seq_rows : 0) * capacity + p;
  ql_store(dst, d_off + row * d_ld + i, d_dtype,
           ql_load(src, s_off + (ulong)t * s_ld + i, s_dtype));
}

// The FP8 KV cache (src/model/kv_fp8.h): one work-item per (kv head, row t) of src (f32 / bf16 /
// f16) writes the head's e4m3 codes and its scale max(amax / 448, 1/(448*512)) at cache row
// (t / seq_rows) * capacity + positions[t]: the CPU ops' codes and scales (IEEE division where the
// device has -cl-fp32-correctly-rounded-divide-sqrt, which the runtime then always asks for).
kernel void store_kv_fp8(const global uchar* src, ulong s_off, ulong s_ld, int s_dtype,
                         const global int* positions, ulong p_off, global uchar* dst, ulong d_off,
                         ulong d_ld, global float* scales, ulong sc_off, ulong sc_ld, int capacity,
                         int kv_heads, int head_dim, int T, int seq_rows) {
  const int h = get_global_id(0);
  const int t = get_global_id(1);
  if (h >= kv_heads || t >= T) return;
  const int p = positions[p_off + t];
  if (p < 0 || p >= capacity) return;
  const ulong row = (ulong)(seq_rows > 0 ? t / seq_rows : 0) * capacity + p;
  const ulong in = s_off + (ulong)t * s_ld + (ulong)h * head_dim;
  float amax = 0.0f;
  for (int i = 0; i < head_dim; ++i) amax = fmax(amax, fabs(ql_load(src, in + i, s_dtype)));
  const float scale = fmax(amax / 448.0f, 1.0f / (448.0f * 512.0f));
  const ulong out = d_off + row * d_ld + (ulong)h * head_dim;
  for (int i = 0; i < head_dim; ++i) {
    dst[out + i] = (uchar)ql_f32_to_e4m3(ql_load(src, in + i, s_dtype) / scale);
  }
  scales[sc_off + row * sc_ld + h] = scale;
}

// A cache element as f32: an FP8 cache's code times its row's scale for the head (one f32
// product, as the CPU ops take it), else the f32 / bf16 / f16 value.
inline float ql_cache_load(const global uchar* base, ulong index, int dtype, float scale) {
  if (dtype == QL_E4M3) return ql_e4m3_to_f32(base[index]) * scale;
  return ql_load(base, index, dtype);
}

// One work-item per (query head, row): causal grouped-query attention over row t's sequence of
// the layer's cache (rows from (t / seq_rows) * capacity, seq_rows 0: one sequence; kv head
// h / group), online softmax, f32 throughout. An FP8 cache (dtype QL_E4M3) reads its scales
// [rows, kv heads] from k_scale / v_scale (row stride sc_ld); other caches pass any buffer there.
#define QL_MAX_HEAD_DIM 512
kernel void attention(const global float* q, ulong q_off, ulong q_ld, const global int* positions,
                      ulong p_off, const global uchar* k, ulong k_off, ulong k_ld, int k_dtype,
                      const global uchar* v, ulong v_off, ulong v_ld, int v_dtype, int capacity,
                      int heads, int kv_heads, int head_dim, int window, global uchar* out,
                      ulong o_off, ulong o_ld, int o_dtype, int T, int seq_rows,
                      const global float* k_scale, ulong ks_off, const global float* v_scale,
                      ulong vs_off, ulong sc_ld) {
  const int h = get_global_id(0);
  const int t = get_global_id(1);
  if (h >= heads || t >= T) return;
  const int d = head_dim;
  const int kvh = h / (heads / kv_heads);
  const int last = positions[p_off + t];
  const ulong out_row = o_off + (ulong)t * o_ld + (ulong)h * d;
  if (last < 0 || last >= capacity) {
    for (int i = 0; i < d; ++i) ql_store(out, out_row + i, o_dtype, NAN);
    return;
  }
  const int first = window > 0 ? max(0, last - window + 1) : 0;
  const ulong base = (ulong)(seq_rows > 0 ? t / seq_rows : 0) * capacity;
  const global float* qv = q + q_off + (ulong)t * q_ld + (ulong)h * d;
  const float scale = 1.0f / sqrt((float)d);
  float acc[QL_MAX_HEAD_DIM];
  for (int i = 0; i < d; ++i) acc[i] = 0.0f;
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  for (int j = first; j <= last; ++j) {
    const ulong krow = k_off + (base + j) * k_ld + (ulong)kvh * d;
    const float ks = k_dtype == QL_E4M3 ? k_scale[ks_off + (base + j) * sc_ld + kvh] : 1.0f;
    const float vs = v_dtype == QL_E4M3 ? v_scale[vs_off + (base + j) * sc_ld + kvh] : 1.0f;
    float dot = 0.0f;
    for (int i = 0; i < d; ++i) dot += qv[i] * ql_cache_load(k, krow + i, k_dtype, ks);
    const float score = dot * scale;
    const float new_max = fmax(running_max, score);
    const float correction = exp(running_max - new_max);
    const float p = exp(score - new_max);
    running_sum = running_sum * correction + p;
    const ulong vrow = v_off + (base + j) * v_ld + (ulong)kvh * d;
    for (int i = 0; i < d; ++i) {
      acc[i] = acc[i] * correction + p * ql_cache_load(v, vrow + i, v_dtype, vs);
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (int i = 0; i < d; ++i) ql_store(out, out_row + i, o_dtype, acc[i] * inv);
}

// out = silu(gate) * up.
kernel void silu_mul(const global float* gate, ulong g_off, ulong g_ld, const global float* up,
                     ulong u_off, ulong u_ld, global uchar* out, ulong o_off, ulong o_ld,
                     int o_dtype, int I, int T) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  if (i >= I || t >= T) return;
  const float g = gate[g_off + (ulong)t * g_ld + i];
  ql_store(out, o_off + (ulong)t * o_ld + i, o_dtype,
           g / (1.0f + exp(-g)) * up[u_off + (ulong)t * u_ld + i]);
}

// dst (f32) += src (f32/bf16/f16).
kernel void add(global float* dst, ulong d_off, ulong d_ld, const global uchar* src, ulong s_off,
                ulong s_ld, int s_dtype, int cols, int rows) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  if (i >= cols || t >= rows) return;
  dst[d_off + (ulong)t * d_ld + i] += ql_load(src, s_off + (ulong)t * s_ld + i, s_dtype);
}

// dst = src with dtype conversion.
kernel void copy(const global uchar* src, ulong s_off, ulong s_ld, int s_dtype, global uchar* dst,
                 ulong d_off, ulong d_ld, int d_dtype, int cols, int rows) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  if (i >= cols || t >= rows) return;
  ql_store(dst, d_off + (ulong)t * d_ld + i, d_dtype,
           ql_load(src, s_off + (ulong)t * s_ld + i, s_dtype));
}

// ids[t] = the first index of row t's maximum (NaN never wins; 0 when nothing is above -inf),
// one work-group of QL_NORM_LANES per row: greedy decoding on the device (model/ops.h argmax).
kernel void argmax(const global float* logits, ulong l_off, ulong l_ld, global int* ids,
                   ulong ids_off, int cols) {
  local float best_value[QL_NORM_LANES];
  local int best_index[QL_NORM_LANES];
  const int t = get_group_id(0);
  const int lane = get_local_id(0);
  const global float* row = logits + l_off + (ulong)t * l_ld;
  // Each lane keeps the first of its maxima (strict >: NaN and -inf never enter); INT_MAX: none.
  float v = -INFINITY;
  int index = INT_MAX;
  for (int i = lane; i < cols; i += QL_NORM_LANES) {
    if (row[i] > v) {
      v = row[i];
      index = i;
    }
  }
  best_value[lane] = v;
  best_index[lane] = index;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int half_width = QL_NORM_LANES / 2; half_width > 0; half_width /= 2) {
    if (lane < half_width) {
      const float ov = best_value[lane + half_width];
      const int oi = best_index[lane + half_width];
      if (ov > best_value[lane] || (ov == best_value[lane] && oi < best_index[lane])) {
        best_value[lane] = ov;
        best_index[lane] = oi;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0) ids[ids_off + t] = best_index[0] == INT_MAX ? 0 : best_index[0];
}
