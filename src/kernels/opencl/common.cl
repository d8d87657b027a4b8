// Shared by every qlinear OpenCL program (the runtime puts it in front of each kernel file):
// element loads and stores of the activation / output dtypes, bit-exact with src/core/dtype.cc,
// and the e4m3fn FP8 conversions. OpenCL C 1.2 without extensions: f16 values go through
// vload_half / vstore_half_rte, which need no cl_khr_fp16.

#define QL_F32 0
#define QL_BF16 1
#define QL_F16 2
#define QL_E4M3 3  // an FP8 KV cache's codes (decoder_ops.cl)

// Round to nearest, ties to even; NaN stays NaN (core f32_to_bf16).
inline ushort ql_f32_to_bf16(float v) {
  const uint bits = as_uint(v);
  if (isnan(v)) return (ushort)((bits >> 16) | 0x40u);
  return (ushort)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

inline float ql_bf16_to_f32(ushort v) { return as_float(((uint)v) << 16); }

// Element `index` of a buffer of f32, bf16 or f16 values.
inline float ql_load(const global uchar* base, ulong index, int dtype) {
  if (dtype == QL_F32) return ((const global float*)base)[index];
  if (dtype == QL_BF16) return ql_bf16_to_f32(((const global ushort*)base)[index]);
  return vload_half(index, (const global half*)base);
}

inline void ql_store(global uchar* base, ulong index, int dtype, float v) {
  if (dtype == QL_F32) {
    ((global float*)base)[index] = v;
  } else if (dtype == QL_BF16) {
    ((global ushort*)base)[index] = ql_f32_to_bf16(v);
  } else {
    vstore_half_rte(v, index, (global half*)base);
  }
}

// e4m3fn: bias 7, no infinities, NaN at 0x7F / 0xFF, subnormals m * 2^-9.
inline float ql_e4m3_to_f32(uint code) {
  const uint sign = (code & 0x80u) << 24;
  const uint e = (code >> 3) & 0xFu;
  const uint m = code & 7u;
  if (e == 15u && m == 7u) return as_float(sign | 0x7FC00000u);
  if (e == 0u) return as_float(sign | as_uint((float)m * 0.001953125f));
  return as_float(sign | ((e + 120u) << 23) | (m << 20));
}

// Round to nearest even, saturating at 448 (core f32_to_f8e4m3 after the activation clamp).
inline uint ql_f32_to_e4m3(float v) {
  const uint sign = (as_uint(v) >> 24) & 0x80u;
  if (isnan(v)) return sign | 0x7Fu;
  const float a = fabs(v);
  if (a < 0.015625f) {                     // below the smallest normal 2^-6: multiples of 2^-9
    return sign | (uint)rint(a * 512.0f);  // 8 is exactly the smallest normal's code
  }
  if (a > 448.0f) return sign | 0x7Eu;                    // saturate (the next code, 0x7F, is NaN)
  const int e = (int)((as_uint(a) >> 23) & 0xFFu) - 127;  // a in [2^e, 2^(e+1))
  const float scaled = a * as_float((uint)(127 + 3 - e) << 23);  // exact: a * 2^(3-e) in [8, 16)
  uint mant = (uint)rint(scaled);
  int biased = e + 7;
  if (mant == 16u) {
    mant = 8u;
    ++biased;
  }
  uint magnitude = ((uint)biased << 3) | (mant - 8u);
  if (magnitude > 0x7Eu) magnitude = 0x7Eu;
  return sign | magnitude;
}

// The activation quantizer's clamp (std::clamp order: NaN passes through).
inline float ql_clamp448(float v) { return v < -448.0f ? -448.0f : (448.0f < v ? 448.0f : v); }
