// Names of the quant enums, QuantSpec::describe / same_scheme, and the spec builders.
#include "quant/quant_spec.h"

#include <fmt/format.h>

#include "quant/formats.h"

namespace qlinear {

std::string_view quant_format_name(QuantFormat format) {
  switch (format) {
    case QuantFormat::kUnquantized:
      return "unquantized";
    case QuantFormat::kAwq:
      return "awq";
    case QuantFormat::kGptq:
      return "gptq";
    case QuantFormat::kAutoRound:
      return "auto-round";
    case QuantFormat::kCompressedTensors:
      return "compressed-tensors";
    case QuantFormat::kFp8:
      return "fp8";
    case QuantFormat::kOnlineFp8:
      return "online-fp8";
  }
  return "?";
}

std::string_view int_packing_name(IntPacking packing) {
  switch (packing) {
    case IntPacking::kGptq:
      return "gptq";
    case IntPacking::kAwq:
      return "awq";
    case IntPacking::kCtPacked:
      return "ct-packed";
  }
  return "?";
}

std::string_view fp8_weight_granularity_name(Fp8WeightGranularity g) {
  switch (g) {
    case Fp8WeightGranularity::kTensor:
      return "tensor";
    case Fp8WeightGranularity::kChannel:
      return "channel";
    case Fp8WeightGranularity::kBlock:
      return "block";
  }
  return "?";
}

std::string_view act_quant_name(ActQuant a) {
  switch (a) {
    case ActQuant::kNone:
      return "none";
    case ActQuant::kDynamicToken:
      return "dyn-token";
    case ActQuant::kDynamicTensor:
      return "dyn-tensor";
    case ActQuant::kStaticTensor:
      return "static-tensor";
    case ActQuant::kDynamicGroup:
      return "dyn-group";
  }
  return "?";
}

std::string sym_setting_text(const IntSpec& spec) {
  if (spec.sym_from_zero_point) return spec.sym ? "zero_point=false" : "zero_point=true";
  if (spec.packing == IntPacking::kCtPacked) return spec.sym ? "symmetric=true" : "symmetric=false";
  return spec.sym ? "sym=true" : "sym=false";
}

namespace quant_internal {

std::string describe_int_spec(const IntSpec& spec) {
  std::string text =
      fmt::format("bits={} group={} {}", spec.bits, spec.group_size, spec.sym ? "sym" : "asym");
  if (spec.act_order) text += " act-order";
  return text;
}

QuantSpec dense_spec(std::string_view layer, QuantFormat format, std::string reason) {
  QuantSpec spec;
  spec.layer = std::string(layer);
  spec.format = format;
  spec.quantized = false;
  spec.skip_reason = std::move(reason);
  return spec;
}

QuantSpec int_quant_spec(std::string_view layer, QuantFormat format, const IntSpec& int_spec) {
  QuantSpec spec;
  spec.layer = std::string(layer);
  spec.format = format;
  spec.quantized = true;
  spec.int_spec = int_spec;
  return spec;
}

QuantSpec fp8_quant_spec(std::string_view layer, QuantFormat format, const Fp8Spec& fp8_spec) {
  QuantSpec spec;
  spec.layer = std::string(layer);
  spec.format = format;
  spec.quantized = true;
  spec.fp8_spec = fp8_spec;
  return spec;
}

}  // namespace quant_internal

std::string QuantSpec::describe() const {
  if (!quantized) return "dense";
  if (int_spec) {
    std::string text = quant_internal::describe_int_spec(*int_spec);
    text += fmt::format(" packing={}", int_packing_name(int_spec->packing));
    if (int_spec->packing == IntPacking::kGptq) {
      text += int_spec->zero_format == GptqZeroFormat::kV1 ? "/v1" : "/v2";
    }
    return text;
  }
  if (fp8_spec) {
    std::string text = fmt::format("fp8 {}", fp8_weight_granularity_name(fp8_spec->weight));
    if (fp8_spec->weight == Fp8WeightGranularity::kBlock) {
      text += fmt::format("[{}x{}]", fp8_spec->block_n, fp8_spec->block_k);
    }
    text += fp8_spec->activation == ActQuant::kNone
                ? std::string(" w8a16")
                : fmt::format(" {}", act_quant_name(fp8_spec->activation));
    if (fp8_spec->online) {
      text += " online";
    } else if (fp8_spec->scale_name != "weight_scale") {
      text += fmt::format(" scale={}", fp8_spec->scale_name);
    }
    return text;
  }
  return "quantized (no scheme)";
}

namespace {

bool same_int(const IntSpec& a, const IntSpec& b) {
  return a.bits == b.bits && a.group_size == b.group_size && a.sym == b.sym &&
         a.act_order == b.act_order && a.packing == b.packing && a.zero_format == b.zero_format;
}

bool same_fp8(const Fp8Spec& a, const Fp8Spec& b) {
  return a.weight == b.weight && a.block_n == b.block_n && a.block_k == b.block_k &&
         a.activation == b.activation && a.scale_name == b.scale_name && a.online == b.online;
}

}  // namespace

bool QuantSpec::same_scheme(const QuantSpec& other) const {
  if (quantized != other.quantized) return false;
  if (!quantized) return true;
  if (format != other.format) return false;
  if (int_spec.has_value() != other.int_spec.has_value()) return false;
  if (fp8_spec.has_value() != other.fp8_spec.has_value()) return false;
  if (int_spec && !same_int(*int_spec, *other.int_spec)) return false;
  if (fp8_spec && !same_fp8(*fp8_spec, *other.fp8_spec)) return false;
  return true;
}

}  // namespace qlinear
