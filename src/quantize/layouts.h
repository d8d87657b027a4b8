// Each format's on-disk tensors of one linear layer, from docs/reference/formats.md: GPTQ §1.2,
// AWQ §1.1, compressed-tensors pack-quantized §1.3, FP8 §3. Written once for the quantizer and
// the test fixtures (which must share no code with the loader, convert/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "qlinear/dtype.h"
#include "quant/quant_spec.h"

namespace qlinear::layout {

enum class LinearLayout { kDense, kGptq, kAwq, kCtPacked, kFp8 };

// How a scalar (per-tensor) FP8 scale is shaped on disk; formats.md §3.1 allows [] and [1].
enum class ScalarShape { k0d, k1 };

struct LayoutScheme {
  LinearLayout layout = LinearLayout::kDense;
  // Integer layouts.
  int bits = 4;
  bool sym = true;         // kCtPacked: no weight_zero_point
  bool act_order = false;  // kCtPacked: weight_g_idx is written
  bool gptq_v1 = true;     // kGptq: zero points stored as z - 1
  DType int_scale_dtype = DType::kF16;
  // FP8.
  Fp8WeightGranularity granularity = Fp8WeightGranularity::kTensor;
  int block_n = 0;
  int block_k = 0;
  ActQuant activation = ActQuant::kNone;  // kStaticTensor writes input_scale
  std::string fp8_scale_name = "weight_scale";
  DType fp8_scale_dtype = DType::kF32;
  ScalarShape scalar_shape = ScalarShape::k0d;  // per-tensor weight_scale and input_scale
};

// One linear layer's values in logical order, whatever the layout.
struct LinearValues {
  std::string name;  // "model.layers.0.self_attn.q_proj"
  int64_t N = 0;
  int64_t K = 0;
  std::vector<double> weight;  // [N, K] dense weight (kDense)
  // Integer layers: codes [K, N], true zero points [G, N], scales [G, N], g_idx [K].
  std::vector<uint32_t> codes;
  std::vector<uint32_t> zeros;
  std::vector<double> scales;
  std::vector<int32_t> g_idx;
  // FP8 layers: e4m3fn codes [N, K]; scales as stored (1 per tensor, N per channel, or
  // [ceil(N/bn), ceil(K/bk)] blocks); input_scale when static (else 0).
  std::vector<uint8_t> fp8_codes;
  std::vector<double> fp8_scales;
  double input_scale = 0.0;
};

struct CheckpointTensor {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<std::byte> bytes;
  int file = 0;  // shard index (sharded checkpoints only)
};

// Appends the checkpoint tensors of one linear layer in `scheme`'s layout.
void emit_linear(const LinearValues& layer, const LayoutScheme& scheme,
                 std::vector<CheckpointTensor>& out);

// `values` rounded to `dtype` (f32, f16 or bf16), as raw bytes.
std::vector<std::byte> float_bytes(const std::vector<double>& values, DType dtype);

template <class T>
std::vector<std::byte> to_bytes(const std::vector<T>& values) {
  auto bytes = std::as_bytes(std::span<const T>(values));
  return {bytes.begin(), bytes.end()};
}

}  // namespace qlinear::layout
