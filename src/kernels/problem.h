// LinearProblem: everything a kernel needs to decide whether it can run a layer, with a compact,
// parseable string form (every QLINEAR_VERBOSE=dispatch line is a `qlinear bench` reproducer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "convert/canonical.h"
#include "core/status.h"
#include "qlinear/dtype.h"
#include "quant/quant_spec.h"

namespace qlinear {

enum class WeightScheme { kInt, kFp8, kDense };

// The open upper end of an M range ("any number of rows").
inline constexpr int64_t kUnboundedM = int64_t{1} << 40;
enum class Fp8Mode { kNone, kW8A8, kW8A16 };  // kNone for non-FP8 schemes
std::string_view fp8_mode_name(Fp8Mode mode);

struct LinearProblem {
  WeightScheme scheme = WeightScheme::kInt;
  // int
  int bits = 0;
  int group_size = 0;  // canonical (> 0; == K for channelwise)
  bool has_zeros = false;
  bool act_order = false;
  // int8 activations (W4A8 / W8A8 int): only when the user asks (--int8-activations), decided by
  // the selector like the FP8 mode; never by a format or a kernel.
  bool int8_activations = false;
  // fp8
  Fp8WeightGranularity fp8_weight = Fp8WeightGranularity::kChannel;
  int block_n = 0;
  int block_k = 0;
  ActQuant act_quant = ActQuant::kNone;  // what the checkpoint asks for
  Fp8Mode fp8_mode = Fp8Mode::kNone;     // decided by the selector's FP8 mode table
  // dense
  DType weight_dtype = DType::kBF16;
  // shapes (local to this rank) and tensor parallelism
  int64_t K = 0;
  int64_t N = 0;
  int64_t full_K = 0;
  int64_t full_N = 0;
  int tp = 1;
  DType act_dtype = DType::kBF16;  // activations as they arrive
  DType out_dtype = DType::kF32;
  bool has_bias = false;
  // The output's halves are [gate | up] of a SwiGLU MLP (LinearOptions::swiglu_halves): a layout
  // hint that lets a kernel support SwiGluEpilogue; never a reason to reject.
  bool swiglu_halves = false;
  // The rows of x this problem covers: selection cuts a layer's range into buckets where kernels
  // differ (a decode kernel for small M, a GEMM above); a kernel may reject by M.
  int64_t m_min = 1;
  int64_t m_max = kUnboundedM;

  bool m_unbounded() const { return m_max >= kUnboundedM; }
  // "M1-16", "M17+" or "M1+"
  std::string m_range_string() const;

  // "int4:g128:zp:K4096:N11008" style; see problem.cc for the grammar.
  std::string to_string() const;
  static Result<LinearProblem> parse(std::string_view text);
  // The problem of a canonical layer (fp8_mode left kNone: the selector decides it).
  static LinearProblem from_canonical(const Canonical& weights, int tp = 1);
  // "w4a16 g128 zp act-order" / "fp8 channel w8a8 dyn-token" / "dense bf16"
  std::string scheme_string() const;
};

}  // namespace qlinear
