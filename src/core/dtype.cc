#include "qlinear/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace qlinear {

namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  std::string_view name;
  std::string_view safetensors;
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, 4, "f32", "F32", true},
    {DType::kF16, 2, "f16", "F16", true},
    {DType::kBF16, 2, "bf16", "BF16", true},
    {DType::kF8E4M3, 1, "f8_e4m3fn", "F8_E4M3", true},
    {DType::kF8E5M2, 1, "f8_e5m2", "F8_E5M2", true},
    {DType::kI8, 1, "i8", "I8", false},
    {DType::kU8, 1, "u8", "U8", false},
    {DType::kI16, 2, "i16", "I16", false},
    {DType::kI32, 4, "i32", "I32", false},
    {DType::kI64, 8, "i64", "I64", false},
    {DType::kBool, 1, "bool", "BOOL", false},
    {DType::kF64, 8, "f64", "F64", true},
};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

// A small binary float format: `exp_bits` exponent bits, `man_bits` mantissa bits.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;       // IEEE-style all-ones exponent = inf/NaN
  bool saturate;      // overflow clamps to the largest finite value instead of inf
  uint32_t max_code;  // largest finite magnitude code
  uint32_t nan_code;  // canonical NaN magnitude code
  uint32_t inf_code;  // magnitude code of infinity (has_inf only)
};

constexpr MiniFloat kF16Format{5, 10, 15, true, false, 0x7BFF, 0x7E00, 0x7C00};
constexpr MiniFloat kE4M3Format{4, 3, 7, false, true, 0x7E, 0x7F, 0};
constexpr MiniFloat kE5M2Format{5, 2, 15, true, true, 0x7B, 0x7F, 0x7C};

float decode(uint32_t code, const MiniFloat& f) {
  const uint32_t sign = code >> (f.exp_bits + f.man_bits);
  const uint32_t exp = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t man = code & ((1u << f.man_bits) - 1);
  const uint32_t magnitude = code & ((1u << (f.exp_bits + f.man_bits)) - 1);
  float value;
  if (f.has_inf && exp == (1u << f.exp_bits) - 1) {
    value = man == 0 ? INFINITY : NAN;
  } else if (!f.has_inf && magnitude == f.nan_code) {
    value = NAN;
  } else if (exp == 0) {
    value = std::ldexp(static_cast<float>(man), 1 - f.bias - f.man_bits);
  } else {
    value = std::ldexp(static_cast<float>(man + (1u << f.man_bits)),
                       static_cast<int>(exp) - f.bias - f.man_bits);
  }
  return sign ? -value : value;
}

// Round-to-nearest-even encoding. Scaling by powers of two is exact in float, and nearbyint
// rounds ties to even in the default floating-point environment.
uint32_t encode(float value, const MiniFloat& f) {
  const uint32_t sign_bit = 1u << (f.exp_bits + f.man_bits);
  const uint32_t sign = std::signbit(value) ? sign_bit : 0;
  if (std::isnan(value)) return sign | f.nan_code;
  const float a = std::fabs(value);
  const float max_finite = decode(f.max_code, f);
  if (std::isinf(a)) return sign | (f.saturate ? f.max_code : f.inf_code);
  const int min_normal_exp = 1 - f.bias;
  uint32_t magnitude;
  int e = 0;
  std::frexp(a, &e);           // a = m * 2^e, m in [0.5, 1)
  const int exponent = e - 1;  // a in [2^exponent, 2^(exponent+1))
  if (a == 0.0f || exponent < min_normal_exp) {
    // Subnormal range: integer multiples of 2^(min_normal_exp - man_bits).
    const float q = std::nearbyint(std::ldexp(a, f.man_bits - min_normal_exp));
    magnitude = static_cast<uint32_t>(q);  // q == 2^man_bits is exactly the smallest normal
  } else {
    const float r = std::nearbyint(std::ldexp(a, f.man_bits - exponent));  // in [2^m, 2^(m+1)]
    uint32_t mant = static_cast<uint32_t>(r);
    int biased = exponent + f.bias;
    if (mant == (2u << f.man_bits)) {
      mant >>= 1;
      ++biased;
    }
    magnitude = (static_cast<uint32_t>(biased) << f.man_bits) | (mant - (1u << f.man_bits));
  }
  // Anything that rounded past the largest finite code (or onto the NaN code of e4m3fn).
  if (magnitude > f.max_code || a > max_finite) {
    if (f.saturate) {
      magnitude = f.max_code;
    } else if (magnitude > f.max_code) {
      magnitude = f.inf_code;
    }
  }
  return sign | magnitude;
}

}  // namespace

std::size_t dtype_size(DType dtype) { return info(dtype).size; }
std::string_view dtype_name(DType dtype) { return info(dtype).name; }
std::string_view dtype_safetensors_name(DType dtype) { return info(dtype).safetensors; }
bool dtype_is_float(DType dtype) { return info(dtype).is_float; }

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.safetensors == name) return entry.dtype;
  }
  return std::nullopt;
}

// By its bit fields rather than the generic minifloat decode (ldexp): this runs per element of
// f16 activations and per scale of the int kernels' f16 scale store.
float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  const uint32_t man = bits & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));  // inf, NaN
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in float
    const float magnitude = static_cast<float>(man) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}
uint16_t f32_to_f16(float value) { return static_cast<uint16_t>(encode(value, kF16Format)); }
float f8e4m3_to_f32(uint8_t bits) { return decode(bits, kE4M3Format); }
uint8_t f32_to_f8e4m3(float value) { return static_cast<uint8_t>(encode(value, kE4M3Format)); }
float f8e5m2_to_f32(uint8_t bits) { return decode(bits, kE5M2Format); }
uint8_t f32_to_f8e5m2(float value) { return static_cast<uint8_t>(encode(value, kE5M2Format)); }

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep it a NaN
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);                       // ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float load_as_f32(const void* data, DType dtype, std::size_t index) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, bytes + 4 * index, 4);
      return v;
    }
    case DType::kF64: {
      double v;
      std::memcpy(&v, bytes + 8 * index, 8);
      return static_cast<float>(v);
    }
    case DType::kF16:
    case DType::kBF16: {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * index, 2);
      return dtype == DType::kF16 ? f16_to_f32(v) : bf16_to_f32(v);
    }
    case DType::kF8E4M3:
      return f8e4m3_to_f32(bytes[index]);
    case DType::kF8E5M2:
      return f8e5m2_to_f32(bytes[index]);
    case DType::kI8:
      return static_cast<float>(static_cast<int8_t>(bytes[index]));
    case DType::kU8:
    case DType::kBool:
      return static_cast<float>(bytes[index]);
    case DType::kI16: {
      int16_t v;
      std::memcpy(&v, bytes + 2 * index, 2);
      return static_cast<float>(v);
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, bytes + 4 * index, 4);
      return static_cast<float>(v);
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, bytes + 8 * index, 8);
      return static_cast<float>(v);
    }
  }
  return 0.0f;
}

void convert_to_f32(const void* src, DType dtype, std::size_t count, float* dst) {
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, count * 4);
    return;
  }
  if (dtype == DType::kBF16) {
    // bf16_to_f32's shift written out: the exported function is not inlined into a -fPIC
    // library (interposable), and a call per element made this loop (the bf16 KV cache read of
    // every decode step) a quarter of a one-thread synth-1b decode; the loop vectorizes.
    const auto* p = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < count; ++i) {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      dst[i] = std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
    }
    return;
  }
  for (std::size_t i = 0; i < count; ++i) dst[i] = load_as_f32(src, dtype, i);
}

}  // namespace qlinear
