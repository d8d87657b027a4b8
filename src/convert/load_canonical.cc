// Reads each shard's tensors from the checkpoint by its QuantSpec, converts them one by one and
// concatenates fused shards along N.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "convert/convert.h"
#include "convert/dense_convert.h"
#include "convert/fp8_convert.h"
#include "convert/fuse.h"
#include "convert/int_convert.h"
#include "io/checkpoint.h"

namespace qlinear {

namespace {

RawTensor raw_of(const TensorRef& ref) {
  return RawTensor{ref.where(), ref.dtype(), ref.shape(), ref.bytes()};
}

Result<RawTensor> required(const Checkpoint& ckpt, const std::string& prefix,
                           std::string_view suffix) {
  QL_ASSIGN_OR_RETURN(const TensorRef ref, ckpt.get(prefix + "." + std::string(suffix)));
  return raw_of(ref);
}

std::optional<RawTensor> optional(const Checkpoint& ckpt, const std::string& prefix,
                                  std::string_view suffix) {
  const std::optional<TensorRef> ref = ckpt.find(prefix + "." + std::string(suffix));
  if (!ref) return std::nullopt;
  return raw_of(*ref);
}

Result<IntWeights> load_int(const Checkpoint& ckpt, const std::string& prefix,
                            const IntSpec& spec) {
  const IntTensorNames names = int_tensor_names(spec.packing);
  QL_ASSIGN_OR_RETURN(RawTensor qweight, required(ckpt, prefix, names.qweight));
  QL_ASSIGN_OR_RETURN(RawTensor scales, required(ckpt, prefix, names.scales));
  IntTensors t{std::move(qweight), std::move(scales)};
  t.qzeros = optional(ckpt, prefix, names.qzeros);
  if (spec.packing != IntPacking::kAwq) t.g_idx = optional(ckpt, prefix, names.g_idx);
  if (spec.packing == IntPacking::kCtPacked)
    t.weight_shape = optional(ckpt, prefix, "weight_shape");
  t.bias = optional(ckpt, prefix, "bias");
  return convert_int(spec, t);
}

Result<DenseTensors> dense_tensors(const Checkpoint& ckpt, const std::string& prefix) {
  QL_ASSIGN_OR_RETURN(RawTensor weight, required(ckpt, prefix, "weight"));
  return DenseTensors{std::move(weight), optional(ckpt, prefix, "bias")};
}

Result<Fp8Weights> load_fp8(const Checkpoint& ckpt, const std::string& prefix,
                            const Fp8Spec& spec) {
  if (spec.online) {
    QL_ASSIGN_OR_RETURN(DenseTensors t, dense_tensors(ckpt, prefix));
    return quantize_online_fp8(spec, t);
  }
  QL_ASSIGN_OR_RETURN(RawTensor weight, required(ckpt, prefix, "weight"));
  QL_ASSIGN_OR_RETURN(RawTensor scale, required(ckpt, prefix, spec.scale_name));
  Fp8Tensors t{std::move(weight), std::move(scale), optional(ckpt, prefix, "input_scale"),
               optional(ckpt, prefix, "bias")};
  return convert_fp8(spec, t);
}

enum class Kind { kInt, kFp8, kDense };

Result<Kind> kind_of(const QuantSpec& spec) {
  if (!spec.quantized && !(spec.fp8_spec && spec.fp8_spec->online)) return Kind::kDense;
  if (spec.fp8_spec) return Kind::kFp8;
  if (spec.int_spec) return Kind::kInt;
  return make_error(ErrorCode::kInternal,
                    "{}: the layer is marked quantized but its spec has neither integer nor FP8 "
                    "parameters",
                    spec.layer);
}

}  // namespace

namespace {

// Each shard of `layer` as a layer of its own.
LinearLayer shard_layer(const LinearLayer& layer, std::size_t i) {
  return LinearLayer{layer.shards[i], {layer.shards[i]}, {layer.specs[i]}, layer.unfused_reason};
}

}  // namespace

Result<LoadedLayer> load_layer(const Checkpoint& checkpoint, const LinearLayer& layer) {
  Result<Canonical> fused = load_canonical(checkpoint, layer);
  if (fused.ok() || layer.shards.size() < 2) {
    if (!fused.ok()) return fused.status();
    return LoadedLayer{{std::move(fused).value()}, ""};
  }
  // The fused form failed: when every shard converts alone, only their agreement did.
  LoadedLayer parts;
  for (std::size_t i = 0; i < layer.shards.size(); ++i) {
    Result<Canonical> part = load_canonical(checkpoint, shard_layer(layer, i));
    if (!part.ok()) return part.status();
    parts.parts.push_back(std::move(part).value());
  }
  parts.unfused_reason = fmt::format("runs unfused: {}", fused.status().message());
  return parts;
}

Result<Canonical> load_canonical(const Checkpoint& checkpoint, const LinearLayer& layer) {
  if (layer.shards.empty() || layer.specs.size() != layer.shards.size()) {
    return make_error(ErrorCode::kInternal, "{}: {} shards but {} quantization specs", layer.name,
                      layer.shards.size(), layer.specs.size());
  }
  QL_ASSIGN_OR_RETURN(const Kind kind, kind_of(layer.specs[0]));
  std::vector<IntWeights> ints;
  std::vector<Fp8Weights> fp8s;
  std::vector<DenseWeights> denses;
  Canonical out;
  out.name = layer.name;
  for (std::size_t i = 0; i < layer.shards.size(); ++i) {
    const std::string& prefix = layer.shards[i];
    const QuantSpec& spec = layer.specs[i];
    QL_ASSIGN_OR_RETURN(const Kind shard_kind, kind_of(spec));
    if (shard_kind != kind) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: shard {} is stored differently from shard {} ({} vs {}); fused "
                        "shards must be quantized alike",
                        layer.name, prefix, layer.shards[0], spec.describe(),
                        layer.specs[0].describe());
    }
    switch (kind) {
      case Kind::kInt: {
        QL_ASSIGN_OR_RETURN(IntWeights w, load_int(checkpoint, prefix, *spec.int_spec));
        out.shard_sizes.push_back(w.N);
        ints.push_back(std::move(w));
        break;
      }
      case Kind::kFp8: {
        QL_ASSIGN_OR_RETURN(Fp8Weights w, load_fp8(checkpoint, prefix, *spec.fp8_spec));
        out.shard_sizes.push_back(w.N);
        fp8s.push_back(std::move(w));
        break;
      }
      case Kind::kDense: {
        QL_ASSIGN_OR_RETURN(DenseTensors t, dense_tensors(checkpoint, prefix));
        QL_ASSIGN_OR_RETURN(DenseWeights w, convert_dense(t));
        out.shard_sizes.push_back(w.N);
        denses.push_back(std::move(w));
        break;
      }
    }
  }
  switch (kind) {
    case Kind::kInt: {
      QL_ASSIGN_OR_RETURN(out.weights, concat_int(std::move(ints), layer.name, layer.shards));
      break;
    }
    case Kind::kFp8: {
      QL_ASSIGN_OR_RETURN(out.weights, concat_fp8(std::move(fp8s), layer.name, layer.shards));
      break;
    }
    case Kind::kDense: {
      QL_ASSIGN_OR_RETURN(out.weights, concat_dense(std::move(denses), layer.name, layer.shards));
      break;
    }
  }
  return out;
}

}  // namespace qlinear
