#include "convert/int_convert.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "convert/packing.h"

namespace qlinear {

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

std::string_view format_label(IntPacking packing) {
  switch (packing) {
    case IntPacking::kGptq:
      return "GPTQ";
    case IntPacking::kAwq:
      return "AWQ";
    case IntPacking::kCtPacked:
      return "compressed-tensors pack-quantized";
  }
  return "?";
}

// The stored qweight shape of `packing` for (K, N, bits), and its symbolic form.
Shape packed_weight_shape(IntPacking packing, int64_t k, int64_t n, int bits) {
  const int64_t pf = 32 / bits;
  switch (packing) {
    case IntPacking::kGptq:
      return {k / pf, n};
    case IntPacking::kAwq:
      return {k, n / pf};
    case IntPacking::kCtPacked:
      return {n, k / pf};
  }
  return {};
}

std::string packed_weight_text(IntPacking packing, int64_t k, int64_t n, int bits) {
  const int64_t pf = 32 / bits;
  switch (packing) {
    case IntPacking::kGptq:
      return fmt::format("[K/{}={}, N={}]", pf, k / pf, n);
    case IntPacking::kAwq:
      return fmt::format("[K={}, N/{}={}]", k, pf, n / pf);
    case IntPacking::kCtPacked:
      return fmt::format("[N={}, K/{}={}]", n, pf, k / pf);
  }
  return {};
}

// When a wrongly shaped qweight matches another packing or bit width, say so: it is almost
// always a mis-tagged quant_method or bits.
std::string packing_hint(IntPacking packing, const Shape& shape, int64_t k, int64_t n, int bits) {
  for (IntPacking other : {IntPacking::kGptq, IntPacking::kAwq, IntPacking::kCtPacked}) {
    if (other == packing) continue;
    if (shape == packed_weight_shape(other, k, n, bits)) {
      const std::string_view sym = other == IntPacking::kGptq  ? "[K/pf, N]"
                                   : other == IntPacking::kAwq ? "[K, N/pf]"
                                                               : "[N, K/pf]";
      return fmt::format("; {} is {} packing", sym, format_label(other));
    }
  }
  for (int other_bits : {2, 4, 8}) {
    if (other_bits == bits) continue;
    if (shape == packed_weight_shape(packing, k, n, other_bits)) {
      return fmt::format("; that is the {}-bit packing", other_bits);
    }
  }
  return {};
}

// The stored zero point meaning "symmetric" for this format (formats.md §1.2, §1.3).
uint32_t sym_stored_zero(const IntSpec& spec) {
  const uint32_t half = 1u << (spec.bits - 1);
  if (spec.packing == IntPacking::kGptq && spec.zero_format == GptqZeroFormat::kV1) return half - 1;
  return half;
}

std::string zero_convention(const IntSpec& spec) {
  if (spec.packing == IntPacking::kGptq) {
    return fmt::format("GPTQ {} {}-bit", spec.zero_format == GptqZeroFormat::kV1 ? "v1" : "v2",
                       spec.bits);
  }
  return fmt::format("{} {}-bit", format_label(spec.packing), spec.bits);
}

struct Dims {
  int64_t k = 0;
  int64_t n = 0;
  int64_t groups = 0;    // scale rows as stored
  std::string k_source;  // how K was found, for messages
};

Result<Dims> infer_dims(const IntSpec& spec, const IntTensors& t, const IntTensorNames& names) {
  const bool ct = spec.packing == IntPacking::kCtPacked;
  if (t.scales.shape.size() != 2) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} {} must be 2-D ({})",
                      t.scales.where, shape_to_string(t.scales.shape), format_label(spec.packing),
                      names.scales, ct ? "[N, G]" : "[G, N]");
  }
  Dims d;
  d.n = ct ? t.scales.shape[0] : t.scales.shape[1];
  d.groups = ct ? t.scales.shape[1] : t.scales.shape[0];
  const int pf = 32 / spec.bits;
  if (t.weight_shape) {
    // compressed-tensors writes torch.tensor(shape) (I64); I32 copies are accepted too.
    std::vector<int64_t> ws;
    if (t.weight_shape->dtype == DType::kI32) {
      QL_ASSIGN_OR_RETURN(const std::vector<int32_t> ws32,
                          read_int32(*t.weight_shape, "weight_shape"));
      ws.assign(ws32.begin(), ws32.end());
    } else {
      QL_ASSIGN_OR_RETURN(ws, read_int64(*t.weight_shape, "weight_shape"));
    }
    if (ws.size() != 2 || ws[0] != d.n) {
      return make_error(
          ErrorCode::kMisconfigured, "{} is {}; it must be [N, K] with N={} (the rows of {})",
          t.weight_shape->where, shape_to_string(Shape(ws.begin(), ws.end())), d.n, t.scales.where);
    }
    d.k = ws[1];
    d.k_source = "K from weight_shape";
  } else if (t.g_idx) {
    if (t.g_idx->shape.size() != 1) {
      return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} must be [K]",
                        t.g_idx->where, shape_to_string(t.g_idx->shape), names.g_idx);
    }
    d.k = t.g_idx->shape[0];
    d.k_source = fmt::format("K from {} length", names.g_idx);
  } else if (spec.group_size > 0 && d.groups > 1) {
    d.k = d.groups * spec.group_size;
    d.k_source = fmt::format("K = {} groups x group_size {}", d.groups, spec.group_size);
  } else if (t.qweight.shape.size() == 2) {
    switch (spec.packing) {
      case IntPacking::kGptq:
        d.k = t.qweight.shape[0] * pf;
        break;
      case IntPacking::kAwq:
        d.k = t.qweight.shape[0];
        break;
      case IntPacking::kCtPacked:
        d.k = t.qweight.shape[1] * pf;
        break;
    }
    d.k_source = fmt::format("K from {}", names.qweight);
  }
  if (d.k <= 0 || d.n <= 0) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: cannot size the layer: K={}, N={} (from {} {} and {} {})",
                      t.qweight.where, d.k, d.n, names.scales, shape_to_string(t.scales.shape),
                      names.qweight, shape_to_string(t.qweight.shape));
  }
  return d;
}

// A scales tensor stored the other way round ([N, G] where [G, N] is expected, or the reverse)
// makes the qweight look wrong; when swapping the scales' axes explains the qweight shape, the
// error blames the scales.
Status check_scales_not_transposed(const IntSpec& spec, const IntTensors& t,
                                   const IntTensorNames& names, const Dims& d) {
  const bool ct = spec.packing == IntPacking::kCtPacked;
  const int64_t n = ct ? t.scales.shape[1] : t.scales.shape[0];
  const int64_t groups = ct ? t.scales.shape[0] : t.scales.shape[1];
  int64_t k = d.k;
  if (!t.weight_shape && !t.g_idx && spec.group_size > 0 && groups > 1) {
    k = groups * spec.group_size;
  }
  if (n <= 0 || k <= 0 || t.qweight.shape != packed_weight_shape(spec.packing, k, n, spec.bits)) {
    return Status::ok_status();
  }
  return make_error(ErrorCode::kMisconfigured,
                    "{} has shape {}; {} {} must be {} = [{}, {}]: the scales look transposed ({} "
                    "fits K={}, N={} with them swapped)",
                    t.scales.where, shape_to_string(t.scales.shape), format_label(spec.packing),
                    names.scales, ct ? "[N, G]" : "[G, N]", ct ? n : groups, ct ? groups : n,
                    t.qweight.where, k, n);
}

// Zero points [G, N] (true values) from the stored tensor, or empty for symmetric layers after
// checking that stored zeros, if any, are the symmetric constant.
Result<std::vector<uint8_t>> convert_zeros(const IntSpec& spec, const IntTensors& t,
                                           const IntTensorNames& names, int64_t n, int64_t groups) {
  if (!t.qzeros) {
    if (spec.sym) return std::vector<uint8_t>{};
    return make_error(ErrorCode::kMisconfigured,
                      "{}: {} (asymmetric) but the layer has no {} tensor", t.qweight.where,
                      sym_setting_text(spec), names.qzeros);
  }
  const RawTensor& z = *t.qzeros;
  const int pf = 32 / spec.bits;
  const bool ct = spec.packing == IntPacking::kCtPacked;
  QL_RETURN_IF_ERROR(check_dtype(z, {DType::kI32}, names.qzeros));
  if (n % pf != 0) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: N={} is not a multiple of {} (32/bits) and {} is packed along N",
                      z.where, n, pf, names.qzeros);
  }
  const Shape expected = ct ? Shape{n / pf, groups} : Shape{groups, n / pf};
  if (z.shape != expected) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} bits={} expects {}", z.where,
                      shape_to_string(z.shape), format_label(spec.packing), spec.bits,
                      ct ? fmt::format("[N/{}={}, G={}]", pf, n / pf, groups)
                         : fmt::format("[G={}, N/{}={}]", groups, pf, n / pf));
  }
  QL_ASSIGN_OR_RETURN(std::vector<uint32_t> words, read_words(z, names.qzeros));
  // stored[g * n + col], in logical column order.
  std::vector<uint8_t> stored;
  if (ct) {
    const std::vector<uint8_t> by_row = unpack_rows(words, n / pf, groups, spec.bits);  // [N, G]
    stored.resize(at(groups * n));
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t g = 0; g < groups; ++g) stored[at(g * n + col)] = by_row[at(col * groups + g)];
    }
  } else {
    const PackOrder order =
        spec.packing == IntPacking::kAwq ? PackOrder::kAwq : PackOrder::kSequential;
    stored = unpack_columns(words, groups, n / pf, spec.bits, order);
  }
  if (spec.sym) {
    const uint32_t expect = sym_stored_zero(spec);
    for (int64_t i = 0; i < groups * n; ++i) {
      if (stored[at(i)] != expect) {
        return make_error(ErrorCode::kMisconfigured,
                          "{}: checkpoint is mis-tagged: {} but {}[{}][{}] = {} (expected "
                          "{} for {})",
                          z.where, sym_setting_text(spec), names.qzeros, i / n, i % n,
                          stored[at(i)], expect, zero_convention(spec));
      }
    }
    return std::vector<uint8_t>{};
  }
  if (spec.packing == IntPacking::kGptq && spec.zero_format == GptqZeroFormat::kV1) {
    // v1 stores z - 1; z = 0 is stored as 2^b - 1 and read back by v1 kernels as 2^b, which is
    // outside the code range: such checkpoints are flagged, not silently wrapped.
    const uint32_t top = (1u << spec.bits) - 1u;
    for (int64_t i = 0; i < groups * n; ++i) {
      if (stored[at(i)] == top) {
        return make_error(ErrorCode::kCorrupt,
                          "{}: {}[{}][{}]: v1 zero point {} means z={} (out of range [0, {}]); "
                          "GPTQ v1 cannot store z=0 (re-export as gptq_v2)",
                          z.where, names.qzeros, i / n, i % n, top, top + 1, top);
      }
      stored[at(i)] = static_cast<uint8_t>(stored[at(i)] + 1);
    }
  }
  return stored;
}

// Validates g_idx and returns it, or an empty vector when it is trivial (g_idx[k] == k / g).
Result<std::vector<int32_t>> convert_g_idx(const IntSpec& spec, const IntTensors& t,
                                           const IntTensorNames& names, int64_t k, int group,
                                           int64_t groups) {
  if (!t.g_idx) {
    if (spec.act_order && groups > 1) {
      return make_error(ErrorCode::kMisconfigured,
                        "{}: act-order (desc_act / actorder) is set but the layer has no {} "
                        "tensor",
                        t.qweight.where, names.g_idx);
    }
    return std::vector<int32_t>{};
  }
  const RawTensor& gt = *t.g_idx;
  if (gt.shape != Shape{k}) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} must be [K={}]", gt.where,
                      shape_to_string(gt.shape), names.g_idx, k);
  }
  QL_ASSIGN_OR_RETURN(std::vector<int32_t> g_idx, read_int32(gt, names.g_idx));
  std::vector<int64_t> population(at(groups), 0);
  bool trivial = true;
  int64_t first_nontrivial = -1;
  for (int64_t i = 0; i < k; ++i) {
    const int32_t v = g_idx[at(i)];
    if (v < 0 || v >= groups) {
      return make_error(ErrorCode::kCorrupt, "{}: {}[{}] = {} is outside [0, {}) (G = K/{} = {})",
                        gt.where, names.g_idx, i, v, groups, group, groups);
    }
    ++population[at(v)];
    if (v != i / group && trivial) {
      trivial = false;
      first_nontrivial = i;
    }
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (population[at(g)] != group) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: group {} has {} members in {}; every group must have exactly "
                        "group_size={}",
                        gt.where, g, population[at(g)], names.g_idx, group);
    }
  }
  if (trivial) return std::vector<int32_t>{};
  if (!spec.act_order) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: checkpoint is mis-tagged: act-order is off but {}[{}] = {} (expected "
                      "{} = k/group_size)",
                      gt.where, names.g_idx, first_nontrivial, g_idx[at(first_nontrivial)],
                      first_nontrivial / group);
  }
  return g_idx;
}

// Canonical qweight [K/pf, N] (GPTQ order) from the stored tensor.
std::vector<uint32_t> canonical_qweight(const IntSpec& spec, const std::vector<uint32_t>& words,
                                        int64_t k, int64_t n) {
  const int pf = 32 / spec.bits;
  switch (spec.packing) {
    case IntPacking::kGptq:
      return words;
    case IntPacking::kAwq: {
      const std::vector<uint8_t> codes =
          unpack_columns(words, k, n / pf, spec.bits, PackOrder::kAwq);  // [K, N]
      return pack_rows(codes, k, n, spec.bits);
    }
    case IntPacking::kCtPacked: {
      // Both pack K sequentially with the same words per column: a word transpose suffices.
      const int64_t rows = k / pf;
      std::vector<uint32_t> out(at(rows * n));
      for (int64_t col = 0; col < n; ++col) {
        for (int64_t r = 0; r < rows; ++r) out[at(r * n + col)] = words[at(col * rows + r)];
      }
      return out;
    }
  }
  return {};
}

}  // namespace

IntTensorNames int_tensor_names(IntPacking packing) {
  if (packing == IntPacking::kCtPacked) {
    return {"weight_packed", "weight_zero_point", "weight_scale", "weight_g_idx"};
  }
  return {"qweight", "qzeros", "scales", "g_idx"};
}

Result<IntWeights> convert_int(const IntSpec& spec, const IntTensors& t) {
  const IntTensorNames names = int_tensor_names(spec.packing);
  const std::string_view label = format_label(spec.packing);
  if (spec.bits != 2 && spec.bits != 4 && spec.bits != 8) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: bits={}; qlinear converts 2, 4 and 8-bit integer weights (a whole "
                      "number of codes per int32 word)",
                      t.qweight.where, spec.bits);
  }
  if (spec.packing == IntPacking::kAwq && !pack_order_supported(PackOrder::kAwq, spec.bits)) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: AWQ bits={}; the AWQ interleave is defined for 4 and 8 bits only",
                      t.qweight.where, spec.bits);
  }
  if (spec.group_size == 0 || spec.group_size < -1) {
    return make_error(ErrorCode::kMisconfigured,
                      "{}: group_size={}; it must be positive or -1 (channelwise)", t.qweight.where,
                      spec.group_size);
  }
  QL_RETURN_IF_ERROR(
      check_dtype(t.qweight, {DType::kI32}, fmt::format("{} {}", label, names.qweight)));
  QL_ASSIGN_OR_RETURN(const Dims d, infer_dims(spec, t, names));
  const int64_t k = d.k;
  const int64_t n = d.n;
  const int pf = 32 / spec.bits;
  const int64_t group = (spec.group_size == -1 || spec.group_size >= k) ? k : spec.group_size;
  if (k % group != 0) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: K={} is not a multiple of group_size={} ({}); qlinear needs whole "
                      "groups",
                      t.qweight.where, k, group, d.k_source);
  }
  if (k % pf != 0) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: K={} is not a multiple of {} (32/bits for bits={}); the canonical "
                      "qweight packs K",
                      t.qweight.where, k, pf, spec.bits);
  }
  if (spec.packing == IntPacking::kAwq && n % pf != 0) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: N={} is not a multiple of {} (32/bits); AWQ packs qweight along N",
                      t.qweight.where, n, pf);
  }
  const Shape expected = packed_weight_shape(spec.packing, k, n, spec.bits);
  if (t.qweight.shape != expected) {
    QL_RETURN_IF_ERROR(check_scales_not_transposed(spec, t, names, d));
    return make_error(ErrorCode::kMisconfigured,
                      "{} has shape {}; {} bits={} expects {} (bits and group_size from the "
                      "quantization config, {}){}",
                      t.qweight.where, shape_to_string(t.qweight.shape), label, spec.bits,
                      packed_weight_text(spec.packing, k, n, spec.bits), d.k_source,
                      packing_hint(spec.packing, t.qweight.shape, k, n, spec.bits));
  }
  const int64_t groups = k / group;
  if (d.groups != groups) {
    return make_error(
        ErrorCode::kMisconfigured,
        "{} has shape {}; with K={} and group_size={} it must have {} groups ({})", t.scales.where,
        shape_to_string(t.scales.shape), k, spec.group_size, groups,
        spec.packing == IntPacking::kCtPacked ? "[N, K/group_size]" : "[K/group_size, N]");
  }

  IntWeights w;
  w.bits = spec.bits;
  w.K = k;
  w.N = n;
  w.group_size = static_cast<int>(group);
  w.num_groups = groups;
  QL_ASSIGN_OR_RETURN(std::vector<uint32_t> words,
                      read_words(t.qweight, fmt::format("{} {}", label, names.qweight)));
  w.qweight = canonical_qweight(spec, words, k, n);
  QL_ASSIGN_OR_RETURN(std::vector<float> scales,
                      read_scales(t.scales, fmt::format("{} {}", label, names.scales)));
  if (spec.packing == IntPacking::kCtPacked) {
    w.scales.resize(scales.size());
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t g = 0; g < groups; ++g) w.scales[at(g * n + col)] = scales[at(col * groups + g)];
    }
  } else {
    w.scales = std::move(scales);
  }
  QL_ASSIGN_OR_RETURN(w.zeros, convert_zeros(spec, t, names, n, groups));
  QL_ASSIGN_OR_RETURN(w.g_idx, convert_g_idx(spec, t, names, k, w.group_size, groups));
  if (t.bias) {
    QL_ASSIGN_OR_RETURN(w.bias, read_bias(*t.bias, n));
  }
  return w;
}

}  // namespace qlinear
