// Element types and bit-exact scalar conversions. f16/bf16/fp8 are stored as raw bit patterns
// (uint16_t / uint8_t): g++ 12 has no std::float16_t and clang 14 no _Float16.
//
// Rounding contract (tested on every code): float32 -> narrower type rounds to nearest, ties to
// even. f16 and bf16 follow IEEE (overflow -> inf, NaN stays NaN). fp8 encoders saturate: finite
// values and infinities beyond the largest finite code clamp to it (e4m3fn: 448, e5m2: 57344);
// NaN becomes the canonical NaN code with the input's sign. This is the clamp-before-cast rule of
// docs/reference/formats.md §4.2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qlinear {

enum class DType {
  kF32,
  kF16,
  kBF16,
  kF8E4M3,  // e4m3fn: bias 7, no inf, NaN = S.1111.111, max 448
  kF8E5M2,  // IEEE-like: bias 15, inf and NaN, max finite 57344
  kI8,
  kU8,
  kI16,
  kI32,
  kI64,
  kBool,
  kF64,
};

// Bytes per element.
std::size_t dtype_size(DType dtype);
// qlinear's short name: "f32", "bf16", "f8_e4m3fn", ...
std::string_view dtype_name(DType dtype);
// The safetensors spelling: "F32", "BF16", "F8_E4M3", ...
std::string_view dtype_safetensors_name(DType dtype);
// Parses a safetensors dtype string; nullopt for unknown ones.
std::optional<DType> dtype_from_safetensors(std::string_view name);
bool dtype_is_float(DType dtype);

// --- scalar conversions ---------------------------------------------------------------------
float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float f8e4m3_to_f32(uint8_t bits);
uint8_t f32_to_f8e4m3(float value);  // saturating
float f8e5m2_to_f32(uint8_t bits);
uint8_t f32_to_f8e5m2(float value);  // saturating

inline constexpr float kF8E4M3Max = 448.0f;
inline constexpr float kF8E5M2Max = 57344.0f;

// Reads element `index` of a buffer of `dtype` as float (f32/f16/bf16/fp8/int types).
float load_as_f32(const void* data, DType dtype, std::size_t index);
// Converts `count` elements of any float dtype to f32.
void convert_to_f32(const void* src, DType dtype, std::size_t count, float* dst);

}  // namespace qlinear
