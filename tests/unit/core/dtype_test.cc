// Bit-exact checks of the scalar converters on every code of each format, against independent
// references: IEEE binary16 from the compiler (_Float16, g++), CUDA's cuda_fp8.h host converters
// where the CUDA headers exist, and the spec's field formulas (formats.md §4.1).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "qlinear/dtype.h"

#if defined(QLINEAR_HAVE_CUDA_FP8_HEADER)
#include <cuda_fp8.h>
#endif

namespace qlinear {
namespace {

// Value of a binary minifloat from its fields (the spec formula, written independently).
double field_value(uint32_t code, int exp_bits, int man_bits, int bias) {
  const uint32_t sign = (code >> (exp_bits + man_bits)) & 1;
  const uint32_t e = (code >> man_bits) & ((1u << exp_bits) - 1);
  const uint32_t m = code & ((1u << man_bits) - 1);
  const double frac = static_cast<double>(m) / static_cast<double>(1u << man_bits);
  const double mag = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, e - bias);
  return sign ? -mag : mag;
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST(DType, SafetensorsNamesRoundTrip) {
  for (DType d :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2, DType::kI8,
        DType::kU8, DType::kI16, DType::kI32, DType::kI64, DType::kBool, DType::kF64}) {
    auto parsed = dtype_from_safetensors(dtype_safetensors_name(d));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_FALSE(dtype_from_safetensors("F8_E4M3FNUZ").has_value());
  EXPECT_FALSE(dtype_from_safetensors("f32").has_value());  // the spec is upper case
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF8E4M3), 1u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
}

TEST(F16, DecodeEveryCodeMatchesFieldFormula) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float got = f16_to_f32(static_cast<uint16_t>(c));
    const uint32_t e = (c >> 10) & 0x1F;
    if (e == 0x1F) {
      if ((c & 0x3FF) == 0) {
        EXPECT_TRUE(std::isinf(got) && std::signbit(got) == ((c >> 15) == 1)) << c;
      } else {
        EXPECT_TRUE(std::isnan(got)) << c;
      }
      continue;
    }
    EXPECT_TRUE(same_float(got, static_cast<float>(field_value(c, 5, 10, 15)))) << c;
  }
}

TEST(F16, EncodeRoundTripsEveryCode) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = f16_to_f32(static_cast<uint16_t>(c));
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(v)))) << c;
      continue;
    }
    EXPECT_EQ(f32_to_f16(v), c) << c;
  }
}

// Between each pair of neighbouring positive finite codes: the exact midpoint goes to the even
// code, anything a little above or below goes to the nearer one.
template <class Encode, class Decode>
void check_ties_to_even(uint32_t max_code, Encode encode, Decode decode) {
  for (uint32_t c = 0; c < max_code; ++c) {
    const double lo = decode(c);
    const double hi = decode(c + 1);
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "midpoint not representable at " << c;
    const uint32_t even = (c % 2 == 0) ? c : c + 1;
    EXPECT_EQ(encode(mid), even) << "tie between codes " << c << " and " << c + 1;
    EXPECT_EQ(encode(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(encode(std::nextafter(mid, INFINITY)), c + 1) << c;
  }
}

TEST(F16, TiesToEven) {
  check_ties_to_even(
      0x7BFF, [](float x) { return static_cast<uint32_t>(f32_to_f16(x)); },
      [](uint32_t c) { return static_cast<double>(f16_to_f32(static_cast<uint16_t>(c))); });
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);  // below the tie with 2^16: largest finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);   // the tie rounds to even: infinity (IEEE)
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(1e-10f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
TEST(F16, MatchesCompilerFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    // Exponents near f16's range so subnormals, normals and overflow are all hit.
    const float x = std::ldexp(std::uniform_real_distribution<float>(-2, 2)(rng),
                               static_cast<int>(bits(rng) % 50) - 30);
    const _Float16 h = static_cast<_Float16>(x);
    EXPECT_EQ(f32_to_f16(x), std::bit_cast<uint16_t>(h)) << x;
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    const _Float16 h = std::bit_cast<_Float16>(static_cast<uint16_t>(c));
    EXPECT_TRUE(same_float(f16_to_f32(static_cast<uint16_t>(c)), static_cast<float>(h))) << c;
  }
}
#endif

TEST(BF16, DecodeEveryCodeMatchesFieldFormula) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const uint32_t e = (c >> 7) & 0xFF;
    const float got = bf16_to_f32(static_cast<uint16_t>(c));
    if (e == 0xFF) {
      EXPECT_EQ(std::isnan(got), (c & 0x7F) != 0) << c;
      continue;
    }
    EXPECT_TRUE(same_float(got, static_cast<float>(field_value(c, 8, 7, 127)))) << c;
  }
}

TEST(BF16, EncodeRoundTripsAndTiesToEven) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = bf16_to_f32(static_cast<uint16_t>(c));
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(v)))) << c;
    } else {
      EXPECT_EQ(f32_to_bf16(v), c) << c;
    }
  }
  check_ties_to_even(
      0x7F7F, [](float x) { return static_cast<uint32_t>(f32_to_bf16(x)); },
      [](uint32_t c) { return static_cast<double>(bf16_to_f32(static_cast<uint16_t>(c))); });
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflow: inf (IEEE)
}

TEST(F8E4M3, DecodeEveryCodeMatchesSpec) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float got = f8e4m3_to_f32(static_cast<uint8_t>(c));
    if ((c & 0x7F) == 0x7F) {  // S.1111.111 is the only NaN; e4m3fn has no infinity
      EXPECT_TRUE(std::isnan(got)) << c;
      continue;
    }
    EXPECT_TRUE(same_float(got, static_cast<float>(field_value(c, 4, 3, 7)))) << c;
  }
  EXPECT_EQ(f8e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // min normal
  EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // min subnormal
  EXPECT_TRUE(std::signbit(f8e4m3_to_f32(0x80)));        // -0
}

TEST(F8E4M3, EncodeRoundTripsSaturatesAndTiesToEven) {
  for (uint32_t c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(f32_to_f8e4m3(f8e4m3_to_f32(static_cast<uint8_t>(c))), c) << c;
  }
  check_ties_to_even(
      0x7E, [](float x) { return static_cast<uint32_t>(f32_to_f8e4m3(x)); },
      [](uint32_t c) { return static_cast<double>(f8e4m3_to_f32(static_cast<uint8_t>(c))); });
  // Clamp before cast (formats.md §4.2): never NaN for finite or infinite input.
  EXPECT_EQ(f32_to_f8e4m3(464.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3(480.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3(1e30f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(f32_to_f8e4m3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the min subnormal: tie to 0
  EXPECT_EQ(f32_to_f8e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
}

TEST(F8E5M2, DecodeEveryCodeMatchesSpecAndRoundTrips) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float got = f8e5m2_to_f32(static_cast<uint8_t>(c));
    const uint32_t e = (c >> 2) & 0x1F;
    if (e == 0x1F) {
      EXPECT_EQ(std::isinf(got), (c & 3) == 0) << c;
      EXPECT_EQ(std::isnan(got), (c & 3) != 0) << c;
      continue;
    }
    EXPECT_TRUE(same_float(got, static_cast<float>(field_value(c, 5, 2, 15)))) << c;
    EXPECT_EQ(f32_to_f8e5m2(got), c) << c;
  }
  check_ties_to_even(
      0x7B, [](float x) { return static_cast<uint32_t>(f32_to_f8e5m2(x)); },
      [](uint32_t c) { return static_cast<double>(f8e5m2_to_f32(static_cast<uint8_t>(c))); });
  EXPECT_EQ(f32_to_f8e5m2(1e9f), 0x7B);  // saturating: 57344
  EXPECT_EQ(f32_to_f8e5m2(INFINITY), 0x7B);
}

#if defined(QLINEAR_HAVE_CUDA_FP8_HEADER)
// CUDA's own host-side converters (satfinite, RNE) are an independent implementation.
TEST(F8, MatchesCudaFp8HeaderOnEveryBf16Value) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float x = bf16_to_f32(static_cast<uint16_t>(c));
    if (std::isnan(x)) continue;
    const auto e4 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    const auto e5 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    EXPECT_EQ(f32_to_f8e4m3(x), e4) << x;
    EXPECT_EQ(f32_to_f8e5m2(x), e5) << x;
  }
}
#endif

TEST(LoadAsF32, ReadsEachDType) {
  const uint16_t bf = f32_to_bf16(-2.5f);
  const uint16_t h = f32_to_f16(0.75f);
  const uint8_t e4 = f32_to_f8e4m3(3.0f);
  const int32_t i = -7;
  EXPECT_EQ(load_as_f32(&bf, DType::kBF16, 0), -2.5f);
  EXPECT_EQ(load_as_f32(&h, DType::kF16, 0), 0.75f);
  EXPECT_EQ(load_as_f32(&e4, DType::kF8E4M3, 0), 3.0f);
  EXPECT_EQ(load_as_f32(&i, DType::kI32, 0), -7.0f);
  const uint16_t many[3] = {f32_to_bf16(1.0f), f32_to_bf16(-1.0f), f32_to_bf16(0.5f)};
  float out[3];
  convert_to_f32(many, DType::kBF16, 3, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[2], 0.5f);
}

}  // namespace
}  // namespace qlinear
