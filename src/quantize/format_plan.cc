#include "quantize/format_plan.h"

#include <array>
#include <regex>

#include "quantize/format_configs.h"

namespace qlinear::quantize {
namespace {

using json = nlohmann::ordered_json;
using layout::LinearLayout;

struct FormatName {
  OutputFormat format;
  std::string_view name;
};
constexpr std::array kNames = {
    FormatName{OutputFormat::kAwq, "awq"},
    FormatName{OutputFormat::kGptq, "gptq"},
    FormatName{OutputFormat::kAutoRound, "autoround"},
    FormatName{OutputFormat::kCtW4A16, "ct-w4a16"},
    FormatName{OutputFormat::kCtW8A16, "ct-w8a16"},
    FormatName{OutputFormat::kCtFp8Dynamic, "ct-fp8-dynamic"},
    FormatName{OutputFormat::kCtFp8Static, "ct-fp8-static"},
    FormatName{OutputFormat::kFp8Block, "fp8-block"},
};

Status flag_error(std::string_view format, std::string_view flag, std::string_view rule) {
  return make_error(ErrorCode::kInvalidArgument, "--format {}: {}: {}", format, flag, rule);
}

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

}  // namespace

std::string_view output_format_name(OutputFormat format) {
  for (const auto& e : kNames) {
    if (e.format == format) return e.name;
  }
  return "unknown";
}

std::optional<OutputFormat> output_format_from_name(std::string_view name) {
  for (const auto& e : kNames) {
    if (e.name == name) return e.format;
  }
  return std::nullopt;
}

std::string output_format_names() {
  std::string out;
  for (const auto& e : kNames) {
    if (!out.empty()) out.push_back('|');
    out.append(e.name);
  }
  return out;
}

Result<FormatPlan> plan_format(const QuantizeOptions& o, DType model_dtype) {
  FormatPlan p;
  p.format = o.format;
  const std::string_view name = output_format_name(o.format);
  const bool calib = !o.calib_file.empty();
  p.fp8 = o.format == OutputFormat::kCtFp8Dynamic || o.format == OutputFormat::kCtFp8Static ||
          o.format == OutputFormat::kFp8Block;
  if (p.fp8) {
    if (o.bits != 0 && o.bits != 8)
      return flag_error(name, fmt::format("--bits {}", o.bits), "FP8 is 8-bit");
    if (o.group_size != 0) {
      return flag_error(name, fmt::format("--group {}", o.group_size),
                        "FP8 scales are per channel, per tensor or per 128x128 block by format");
    }
    if (o.sym.has_value() || o.act_order) {
      return flag_error(name, "--sym/--asym/--act-order", "integer formats only");
    }
    p.bits = 8;
    p.group_size = 0;
    p.algorithm = Algorithm::kAbsmax;
    p.scheme.layout = LinearLayout::kFp8;
    if (o.format == OutputFormat::kCtFp8Dynamic) {
      p.scheme.granularity = Fp8WeightGranularity::kChannel;
      p.scheme.activation = ActQuant::kDynamicToken;
      p.scheme.fp8_scale_dtype = model_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
    } else if (o.format == OutputFormat::kCtFp8Static) {
      if (!calib) {
        return flag_error(name, "no --calib",
                          "static activation scales (input_scale = max|x| / 448) need "
                          "calibration text");
      }
      p.scheme.granularity = Fp8WeightGranularity::kTensor;
      p.scheme.activation = ActQuant::kStaticTensor;
      p.scheme.scalar_shape = layout::ScalarShape::k1;
    } else {
      p.scheme.granularity = Fp8WeightGranularity::kBlock;
      p.scheme.block_n = 128;
      p.scheme.block_k = 128;
      p.scheme.activation = ActQuant::kDynamicGroup;
      p.scheme.fp8_scale_name = "weight_scale_inv";
    }
    return p;
  }

  p.group_size = o.group_size == 0 ? 128 : o.group_size;
  if (p.group_size != 32 && p.group_size != 64 && p.group_size != 128 && p.group_size != -1) {
    return flag_error(name, fmt::format("--group {}", p.group_size), "one of 32, 64, 128, -1");
  }
  const int default_bits = o.format == OutputFormat::kCtW8A16 ? 8 : 4;
  p.bits = o.bits == 0 ? default_bits : o.bits;
  p.act_order = o.act_order;
  if (p.act_order && !calib) {
    return flag_error(name, "--act-order without --calib",
                      "the column order is by the calibration Hessian's diagonal");
  }
  switch (o.format) {
    case OutputFormat::kAwq:
      if (p.bits != 4)
        return flag_error(name, fmt::format("--bits {}", p.bits), "AWQ GEMM is 4-bit");
      if (o.sym.value_or(false)) {
        return flag_error(name, "--sym", "AutoAWQ's GEMM layout has zero points (zero_point true)");
      }
      if (p.act_order) return flag_error(name, "--act-order", "AWQ has no act-order");
      p.sym = false;
      p.scheme.layout = LinearLayout::kAwq;
      p.algorithm = calib ? Algorithm::kAwq : Algorithm::kRtn;
      break;
    case OutputFormat::kGptq:
      if (p.bits != 4 && p.bits != 8) {
        return flag_error(name, fmt::format("--bits {}", p.bits), "4 or 8");
      }
      p.sym = o.sym.value_or(true);
      p.scheme.layout = LinearLayout::kGptq;
      p.scheme.gptq_v1 = true;
      p.algorithm = calib ? Algorithm::kGptq : Algorithm::kRtn;
      p.extra_config_file = "quantize_config.json";
      break;
    case OutputFormat::kAutoRound:
      if (p.bits != 4 && p.bits != 8) {
        return flag_error(name, fmt::format("--bits {}", p.bits), "4 or 8");
      }
      if (p.act_order) return flag_error(name, "--act-order", "AutoRound has no act-order");
      p.sym = o.sym.value_or(true);
      if (!p.sym && p.bits != 4) {
        return flag_error(name, "--asym --bits 8",
                          "asymmetric AutoRound exports use auto_awq packing, which is 4-bit");
      }
      p.scheme.layout = p.sym ? LinearLayout::kGptq : LinearLayout::kAwq;
      p.scheme.gptq_v1 = true;
      p.algorithm = calib ? Algorithm::kGptq : Algorithm::kRtn;
      break;
    case OutputFormat::kCtW4A16:
    case OutputFormat::kCtW8A16:
      if (p.bits != default_bits) {
        return flag_error(name, fmt::format("--bits {}", p.bits),
                          fmt::format("this format is {}-bit", default_bits));
      }
      p.sym = o.sym.value_or(true);
      p.scheme.layout = LinearLayout::kCtPacked;
      p.scheme.int_scale_dtype = model_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
      p.algorithm = calib ? Algorithm::kGptq : Algorithm::kRtn;
      break;
    default:
      break;
  }
  // Channelwise act-order leaves g_idx trivial; the configs then say no act-order (as
  // AutoGPTQConfig resets desc_act for g = -1).
  p.scheme.bits = p.bits;
  p.scheme.sym = p.sym;
  p.scheme.act_order = p.act_order && p.group_size != -1;
  return p;
}

Status check_layer_shape(const FormatPlan& p, const std::string& layer, int64_t N, int64_t K) {
  const std::string_view name = output_format_name(p.format);
  if (p.fp8) return Status::ok_status();
  if (p.group_size > 0 && K % p.group_size != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: in_features K = {} is not a multiple of --group {} (--format {}); use "
                      "another group size or --ignore the layer",
                      layer, K, p.group_size, name);
  }
  const int64_t pf = 32 / p.bits;
  const bool packs_n = p.scheme.layout == LinearLayout::kAwq ||
                       p.scheme.layout == LinearLayout::kGptq ||
                       (p.scheme.layout == LinearLayout::kCtPacked && !p.sym);
  const bool packs_k =
      p.scheme.layout == LinearLayout::kGptq || p.scheme.layout == LinearLayout::kCtPacked;
  if (packs_n && N % pf != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: out_features N = {} is not a multiple of {} ({}-bit values packed along "
                      "N in --format {})",
                      layer, N, pf, p.bits, name);
  }
  if (packs_k && K % pf != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: in_features K = {} is not a multiple of {} ({}-bit values packed along "
                      "K in --format {})",
                      layer, K, pf, p.bits, name);
  }
  return Status::ok_status();
}

json quantization_config(const FormatPlan& p, const std::vector<std::string>& ignored) {
  const json ignored_list = ignored.empty() ? json(nullptr) : json(ignored);
  json ct_ignore = json::array({"lm_head"});
  for (const std::string& l : ignored) ct_ignore.push_back(l);
  const json group = p.group_size == -1 ? json(nullptr) : json(p.group_size);
  switch (p.format) {
    case OutputFormat::kAwq:
      return layout::awq_config(p.bits, p.group_size, ignored_list);
    case OutputFormat::kGptq: {
      json c = layout::gptq_config(p.bits, p.group_size, p.sym, p.scheme.act_order, "gptq");
      if (!ignored.empty()) {
        // GPTQModel's per-module rules (AutoGPTQ itself cannot skip modules).
        json dynamic = json::object();
        for (const std::string& l : ignored)
          dynamic[fmt::format("-:{}$", regex_escape(l))] = json::object();
        c["dynamic"] = dynamic;
      }
      return c;
    }
    case OutputFormat::kAutoRound: {
      json extra = json::object();
      for (const std::string& l : ignored) extra[l] = {{"bits", 16}, {"data_type", "float"}};
      json c = {{"quant_method", "auto-round"},
                {"packing_format", p.sym ? "auto_round:auto_gptq" : "auto_round:auto_awq"},
                {"bits", p.bits},
                {"group_size", p.group_size},
                {"sym", p.sym},
                {"data_type", "int"},
                {"autoround_version", "0.5.1"},
                {"block_name_to_quantize", "model.layers"}};
      if (!ignored.empty()) c["extra_config"] = extra;
      return c;
    }
    case OutputFormat::kCtW4A16:
    case OutputFormat::kCtW8A16:
      return layout::ct_config(
          "pack-quantized",
          layout::ct_int_group(p.bits, p.sym, p.group_size == -1 ? "channel" : "group", group,
                               p.scheme.act_order ? json("group") : json(nullptr)),
          ct_ignore);
    case OutputFormat::kCtFp8Dynamic:
      return layout::ct_config("float-quantized",
                               layout::ct_fp8_group(layout::ct_fp8_args("channel", false),
                                                    layout::ct_fp8_args("token", true)),
                               ct_ignore);
    case OutputFormat::kCtFp8Static:
      return layout::ct_config("float-quantized",
                               layout::ct_fp8_group(layout::ct_fp8_args("tensor", false),
                                                    layout::ct_fp8_args("tensor", false)),
                               ct_ignore);
    case OutputFormat::kFp8Block:
      // As transformers' FineGrainedFP8Config saves it (formats.md §7.2).
      return {{"quant_method", "fp8"},
              {"activation_scheme", "dynamic"},
              {"weight_block_size", {128, 128}},
              {"fmt", "e4m3"},
              {"modules_to_not_convert", ignored_list}};
  }
  return nullptr;
}

}  // namespace qlinear::quantize
