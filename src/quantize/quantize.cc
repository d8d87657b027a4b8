// The quantize driver: plan the layers, calibrate, then per decoder layer: AWQ scales (folded
// into the previous norm / linear), the integer or FP8 quantization of each linear layer, and its
// tensors in the format's layout; finally the folder written file by file.
#include "quantize/quantize.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "core/progress.h"
#include "io/checkpoint.h"
#include "io/json_text.h"
#include "io/safetensors.h"
#include "quantize/awq.h"
#include "quantize/calibration.h"
#include "quantize/format_plan.h"
#include "quantize/fp8_grid.h"
#include "quantize/gptq.h"
#include "quantize/int_grid.h"
#include "quantize/output_dir.h"

namespace qlinear::quantize {
namespace {

using Clock = std::chrono::steady_clock;
using layout::CheckpointTensor;
using layout::LinearLayout;
using layout::LinearValues;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A linear layer of the float checkpoint.
struct Linear {
  std::string name;  // without ".weight"
  int64_t layer = 0;
  std::string role;  // "q_proj", ...
  int64_t N = 0;
  int64_t K = 0;
  bool ignored = false;
};

std::vector<double> read_f64(const TensorRef& t) {
  const auto n = static_cast<size_t>(t.bytes().size() / dtype_size(t.dtype()));
  std::vector<float> f(n);
  convert_to_f32(t.bytes().data(), t.dtype(), n, f.data());
  return {f.begin(), f.end()};
}

// Values of a float tensor in its own dtype.
std::vector<std::byte> as_dtype(const std::vector<double>& v, DType dtype) {
  return layout::float_bytes(v, dtype);
}

Result<std::vector<Linear>> find_linears(const Checkpoint& ckpt,
                                         const std::vector<std::string>& ignore) {
  std::vector<std::regex> patterns;
  for (const std::string& p : ignore) {
    try {
      patterns.emplace_back(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--ignore \"{}\": not a regular expression: {}", p, e.what());
    }
  }
  static const std::regex kLinear(
      R"(^(model\.layers\.(\d+)\.(?:self_attn|mlp)\.((?:q|k|v|o|gate|up|down)_proj))\.weight$)");
  std::vector<Linear> out;
  for (const std::string& name : ckpt.tensor_names()) {
    std::smatch m;
    if (!std::regex_match(name, m, kLinear)) continue;
    QL_ASSIGN_OR_RETURN(const TensorRef t, ckpt.get(name));
    if (t.shape().size() != 2 || !dtype_is_float(t.dtype()) || dtype_size(t.dtype()) < 2) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: a {}-d {} tensor; quantize needs a float checkpoint (2-d bf16, f16 "
                        "or f32 linear weights)",
                        t.where(), t.shape().size(), dtype_name(t.dtype()));
    }
    Linear l;
    l.name = m[1].str();
    l.layer = std::stoll(m[2].str());
    l.role = m[3].str();
    l.N = t.shape()[0];
    l.K = t.shape()[1];
    for (const std::regex& r : patterns) l.ignored = l.ignored || std::regex_search(l.name, r);
    out.push_back(std::move(l));
  }
  if (out.empty()) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: no linear layer named model.layers.N.{{self_attn,mlp}}.*_proj.weight "
                      "(quantize handles Llama-style decoders)",
                      ckpt.dir());
  }
  // vLLM fuses q/k/v and gate/up: a fused layer is quantized whole or not at all.
  std::map<std::string, std::pair<std::string, bool>> seen;
  for (const Linear& l : out) {
    const std::string key = input_key(l.name);
    const auto [it, added] = seen.try_emplace(key, l.name, l.ignored);
    if (!added && it->second.second != l.ignored) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--ignore: {} is {} but {} is not; the layers fused into {} must all be "
                        "ignored or all be quantized",
                        l.ignored ? l.name : it->second.first, "ignored",
                        l.ignored ? it->second.first : l.name, key);
    }
  }
  return out;
}

// The files beside the weights that a loader or tokenizer reads, copied unchanged.
bool is_companion_file(const std::string& name) {
  return name.starts_with("tokenizer") || name == "special_tokens_map.json" ||
         name == "generation_config.json" || name == "vocab.json" || name == "merges.txt" ||
         name == "added_tokens.json" || name.starts_with("chat_template") ||
         name == "preprocessor_config.json";
}

double frob_sq(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return s;
}

// One decoder layer's linear weights as float64, and the AWQ input scales of each.
struct LayerWork {
  std::map<std::string, std::vector<double>> weights;  // role -> [N, K]
  std::map<std::string, std::vector<double>> input_scales;
  std::map<std::string, double> alpha;
};

class Quantizer {
 public:
  Quantizer(const QuantizeOptions& o, const FormatPlan& p, const Checkpoint& ckpt,
            const Calibration* calib)
      : o_(o), p_(p), ckpt_(ckpt), calib_(calib) {
    grid_.bits = p.bits;
    grid_.sym = p.sym;
    grid_.scale_dtype = p.scheme.int_scale_dtype;
    grid_.min_zero_one = p.scheme.layout == LinearLayout::kGptq && !p.sym;
  }

  Status run_layer(const std::vector<const Linear*>& linears, Progress& progress,
                   QuantizeReport& report);

  std::map<std::string, std::vector<CheckpointTensor>> emitted;  // by layer name
  std::map<std::string, std::vector<double>> modified;           // tensor name -> new values

 private:
  Status awq_fold(const std::vector<const Linear*>& linears, LayerWork& work);
  Status quantize_linear(const Linear& l, LayerWork& work, LayerReport& r);
  Result<std::vector<double>> tensor_values(const std::string& name);

  const QuantizeOptions& o_;
  const FormatPlan& p_;
  const Checkpoint& ckpt_;
  const Calibration* calib_;
  IntGrid grid_;
};

Result<std::vector<double>> Quantizer::tensor_values(const std::string& name) {
  const auto it = modified.find(name);
  if (it != modified.end()) return it->second;
  QL_ASSIGN_OR_RETURN(const TensorRef t, ckpt_.get(name));
  return read_f64(t);
}

Status Quantizer::awq_fold(const std::vector<const Linear*>& linears, LayerWork& work) {
  std::map<std::string, const Linear*> by_role;
  for (const Linear* l : linears) by_role[l->role] = l;
  auto has = [&](std::initializer_list<const char*> roles) {
    for (const char* r : roles) {
      if (!by_role.count(r) || by_role[r]->ignored) return false;
    }
    return true;
  };
  const std::string prefix = fmt::format("model.layers.{}.", linears.front()->layer);
  struct Group {
    std::vector<std::string> members;
    std::string prev_norm;    // a norm weight scaled by 1/s, or
    std::string prev_linear;  // the rows of the linear before (role)
  };
  std::vector<Group> groups;
  if (has({"q_proj", "k_proj", "v_proj"})) {
    groups.push_back({{"q_proj", "k_proj", "v_proj"}, prefix + "input_layernorm.weight", ""});
  }
  // AutoAWQ scales o_proj through v_proj only when their shapes chain (no GQA).
  if (has({"o_proj"}) && by_role.count("v_proj") && by_role["v_proj"]->N == by_role["o_proj"]->K) {
    groups.push_back({{"o_proj"}, "", "v_proj"});
  }
  if (has({"gate_proj", "up_proj"})) {
    groups.push_back({{"gate_proj", "up_proj"}, prefix + "post_attention_layernorm.weight", ""});
  }
  if (has({"down_proj"}) && by_role.count("up_proj"))
    groups.push_back({{"down_proj"}, "", "up_proj"});

  // Every group is searched on the float weights, then all are folded (as AutoAWQ does).
  std::vector<AwqSearch> found;
  for (const Group& g : groups) {
    const Linear* first = by_role[g.members.front()];
    const InputStats* stats = calib_->find(first->name);
    if (stats == nullptr || stats->rows == 0) {
      return make_error(ErrorCode::kInternal, "{}: no calibration inputs captured", first->name);
    }
    std::vector<WeightRef> refs;
    for (const std::string& m : g.members) refs.push_back({&work.weights[m], by_role[m]->N});
    const int64_t gs = p_.group_size == -1 ? first->K : p_.group_size;
    found.push_back(awq_search(refs, first->K, gs, grid_, stats->gram_mean(), stats->abs_mean()));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const std::vector<double>& s = found[i].scales;
    const auto K = static_cast<int64_t>(s.size());
    for (const std::string& m : g.members) {
      std::vector<double>& w = work.weights[m];
      for (size_t j = 0; j < w.size(); ++j) w[j] *= s[j % static_cast<size_t>(K)];
      work.input_scales[m] = s;
      work.alpha[m] = found[i].alpha;
    }
    if (!g.prev_norm.empty()) {
      QL_ASSIGN_OR_RETURN(std::vector<double> norm, tensor_values(g.prev_norm));
      for (int64_t k = 0; k < K; ++k) norm[k] /= s[k];
      modified[g.prev_norm] = std::move(norm);
    } else {
      const Linear* prev = by_role[g.prev_linear];
      std::vector<double>& w = work.weights[g.prev_linear];
      for (int64_t n = 0; n < prev->N; ++n) {
        for (int64_t k = 0; k < prev->K; ++k) w[n * prev->K + k] /= s[n];
      }
      const std::string bias = prev->name + ".bias";
      if (ckpt_.find(bias)) {
        QL_ASSIGN_OR_RETURN(std::vector<double> b, tensor_values(bias));
        for (int64_t n = 0; n < prev->N; ++n) b[n] /= s[n];
        modified[bias] = std::move(b);
      }
      // An ignored previous layer is written as its folded float weight.
      if (prev->ignored) modified[prev->name + ".weight"] = w;
    }
  }
  return Status::ok_status();
}

Status Quantizer::quantize_linear(const Linear& l, LayerWork& work, LayerReport& r) {
  const std::vector<double>& w = work.weights[l.role];
  const auto s_it = work.input_scales.find(l.role);
  const std::vector<double>* s = s_it == work.input_scales.end() ? nullptr : &s_it->second;
  const InputStats* stats = calib_ ? calib_->find(l.name) : nullptr;
  std::vector<double> gram;
  if (stats != nullptr && stats->rows > 0) gram = stats->gram_mean();
  const int64_t gs = p_.group_size == -1 ? l.K : p_.group_size;

  LinearValues v;
  v.name = l.name;
  v.N = l.N;
  v.K = l.K;
  std::vector<double> dequant;
  if (p_.fp8) {
    const DType sd = p_.scheme.fp8_scale_dtype;
    Fp8Layer q = fp8_quantize(w, l.N, l.K, p_.scheme.granularity, 128, 128, sd);
    v.fp8_codes = std::move(q.codes);
    v.fp8_scales = std::move(q.scales);
    dequant = std::move(q.dequant);
    if (p_.scheme.activation == ActQuant::kStaticTensor) {
      if (stats == nullptr) {
        return make_error(ErrorCode::kInternal, "{}: no calibration inputs captured", l.name);
      }
      v.input_scale = fp8_scale(stats->abs_max, DType::kF32);
    }
    r.algorithm = "absmax";
  } else {
    // The clipping search weighs each input channel by E[x^2] (of the scaled input under AWQ).
    std::vector<double> importance;
    if (!gram.empty()) {
      importance.resize(static_cast<size_t>(l.K));
      for (int64_t k = 0; k < l.K; ++k) {
        const double sk = s ? (*s)[k] : 1.0;
        importance[k] = gram[k * l.K + k] / (sk * sk) + 1e-12;
      }
    }
    IntLayer q;
    if (p_.algorithm == Algorithm::kGptq) {
      std::vector<double> h(gram.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = 2.0 * gram[i];
      GptqOptions go;
      go.grid = grid_;
      go.group_size = gs;
      go.act_order = p_.act_order;
      QL_ASSIGN_OR_RETURN(q, gptq_quantize(w, l.N, l.K, std::move(h), go, l.name));
      r.algorithm = p_.act_order ? "gptq+act-order" : "gptq";
    } else {
      q = rtn_quantize(w, l.N, l.K, gs, grid_, importance, true);
      r.algorithm = s ? "awq+clip" : "rtn+clip";
    }
    for (double sc : q.scales) {
      if (!std::isfinite(sc)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: a scale of {} does not fit {} (weights too large or not finite)",
                          l.name, sc, dtype_name(grid_.scale_dtype));
      }
    }
    v.codes = std::move(q.codes);
    v.zeros = std::move(q.zeros);
    v.scales = std::move(q.scales);
    v.g_idx = std::move(q.g_idx);
    dequant = std::move(q.dequant);
  }
  // Errors against the float function: undo the input scaling of both sides.
  std::vector<double> ref = w;
  if (s) {
    for (size_t j = 0; j < ref.size(); ++j) {
      ref[j] /= (*s)[j % static_cast<size_t>(l.K)];
      dequant[j] /= (*s)[j % static_cast<size_t>(l.K)];
    }
  }
  std::vector<double> d(ref.size());
  for (size_t j = 0; j < d.size(); ++j) d[j] = ref[j] - dequant[j];
  const double wn = frob_sq(ref);
  r.weight_error = wn > 0 ? std::sqrt(frob_sq(d) / wn) : 0.0;
  if (!gram.empty()) {
    const double base = output_error(ref, l.N, l.K, gram);
    r.output_error = base > 0 ? std::sqrt(output_error(d, l.N, l.K, gram) / base) : 0.0;
  }
  if (work.alpha.count(l.role)) r.awq_alpha = work.alpha[l.role];
  layout::emit_linear(v, p_.scheme, emitted[l.name]);
  return Status::ok_status();
}

Status Quantizer::run_layer(const std::vector<const Linear*>& linears, Progress& progress,
                            QuantizeReport& report) {
  LayerWork work;
  for (const Linear* l : linears) {
    QL_ASSIGN_OR_RETURN(work.weights[l->role], tensor_values(l->name + ".weight"));
    for (double x : work.weights[l->role]) {
      if (!std::isfinite(x)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "{}.weight: holds {}; weights must be finite", l->name, x);
      }
    }
  }
  if (p_.algorithm == Algorithm::kAwq) QL_RETURN_IF_ERROR(awq_fold(linears, work));
  for (const Linear* l : linears) {
    const Clock::time_point t = Clock::now();
    LayerReport r;
    r.name = l->name;
    r.N = l->N;
    r.K = l->K;
    if (l->ignored) {
      r.algorithm = "ignored";
    } else {
      QL_RETURN_IF_ERROR(quantize_linear(*l, work, r));
    }
    r.seconds = seconds_since(t);
    report.layers.push_back(std::move(r));
    progress.advance(1);
  }
  return Status::ok_status();
}

Status write_checkpoint(const Checkpoint& ckpt, const Quantizer& q, const FormatPlan& plan,
                        const std::vector<std::string>& ignored, OutputDir& out,
                        QuantizeReport& report) {
  namespace fs = std::filesystem;
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");
  for (const std::string& name : ckpt.tensor_names()) {
    if (name.ends_with(".weight")) {
      const auto it = q.emitted.find(name.substr(0, name.size() - 7));
      if (it != q.emitted.end()) {
        for (const CheckpointTensor& t : it->second) writer.add(t.name, t.dtype, t.shape, t.bytes);
        continue;
      }
    }
    QL_ASSIGN_OR_RETURN(const TensorRef t, ckpt.get(name));
    const auto m = q.modified.find(name);
    if (m != q.modified.end()) {
      writer.add(name, t.dtype(), t.shape(), as_dtype(m->second, t.dtype()));
    } else {
      writer.add(name, t.dtype(), t.shape(), t.bytes());
    }
  }
  const std::string weights = "model.safetensors";
  QL_RETURN_IF_ERROR(writer.write(out.path() + "/" + weights));
  report.files.push_back(weights);

  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ckpt.dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !is_companion_file(name)) continue;
    QL_ASSIGN_OR_RETURN(const std::string text, io_internal::read_text_file(entry.path().string()));
    QL_RETURN_IF_ERROR(out.write_file(name, text));
    report.files.push_back(name);
  }
  const nlohmann::ordered_json qc = quantization_config(plan, ignored);
  if (!plan.extra_config_file.empty()) {
    QL_RETURN_IF_ERROR(out.write_file(plan.extra_config_file, qc.dump(2) + "\n"));
    report.files.push_back(plan.extra_config_file);
  }
  // config.json last, with its keys in their order: a folder without it is not a checkpoint.
  const std::string config_path = ckpt.dir() + "/config.json";
  QL_ASSIGN_OR_RETURN(const std::string config_text, io_internal::read_text_file(config_path));
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(config_text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: not a JSON object", config_path);
  }
  config["quantization_config"] = qc;
  QL_RETURN_IF_ERROR(out.write_file("config.json", config.dump(2) + "\n"));
  report.files.push_back("config.json");
  for (const std::string& f : report.files) {
    report.bytes_written += fs::file_size(out.path() + "/" + f, ec);
  }
  return Status::ok_status();
}

}  // namespace

Result<QuantizeReport> quantize_checkpoint(const QuantizeOptions& o) {
  const Clock::time_point start = Clock::now();
  QL_ASSIGN_OR_RETURN(const Checkpoint ckpt, Checkpoint::open(o.model_dir));
  if (!ckpt.quant_config().is_null()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: already quantized ({}); quantize takes a float checkpoint", o.model_dir,
                      ckpt.quant_config_source());
  }
  QL_ASSIGN_OR_RETURN(const std::vector<Linear> linears, find_linears(ckpt, o.ignore));
  QL_ASSIGN_OR_RETURN(const TensorRef first, ckpt.get(linears.front().name + ".weight"));
  QL_ASSIGN_OR_RETURN(const FormatPlan plan, plan_format(o, first.dtype()));
  std::vector<std::string> ignored;
  for (const Linear& l : linears) {
    if (l.ignored) {
      ignored.push_back(l.name);
    } else {
      QL_RETURN_IF_ERROR(check_layer_shape(plan, l.name, l.N, l.K));
    }
  }
  if (o.calib_tokens < 2) {
    return make_error(ErrorCode::kInvalidArgument, "--calib-tokens {}: must be >= 2",
                      o.calib_tokens);
  }
  QL_ASSIGN_OR_RETURN(OutputDir out, OutputDir::prepare(o.out_dir, o.model_dir, o.force));

  QuantizeReport report;
  report.format = std::string(output_format_name(o.format));
  report.out_dir = o.out_dir;
  report.bits = plan.bits;
  report.group_size = plan.group_size;
  report.sym = plan.sym;
  report.act_order = plan.scheme.act_order;
  report.bytes_in = ckpt.bytes_on_disk();
  std::optional<Calibration> calib;
  if (!o.calib_file.empty()) {
    CalibrationOptions co;
    co.model_dir = o.model_dir;
    co.text_file = o.calib_file;
    co.max_tokens = o.calib_tokens;
    co.threads = o.threads;
    const auto& cfg = ckpt.config();
    const int64_t max_pos = cfg.value("max_position_embeddings", int64_t{512});
    co.seq_len = std::max<int64_t>(2, std::min<int64_t>(512, max_pos));
    QL_ASSIGN_OR_RETURN(calib, calibrate(co));
    report.calib_tokens = calib->tokens;
    report.calib_seconds = calib->seconds;
  } else if (!plan.fp8) {
    report.notes.push_back(
        "no --calib: round-to-nearest with the clipping search (GPTQ's error feedback and AWQ's "
        "activation-aware scales need calibration text)");
  }

  Quantizer q(o, plan, ckpt, calib ? &*calib : nullptr);
  std::map<int64_t, std::vector<const Linear*>> by_layer;
  for (const Linear& l : linears) by_layer[l.layer].push_back(&l);
  Progress progress("quantizing", linears.size(), o.progress);
  for (const auto& [layer, members] : by_layer) {
    QL_RETURN_IF_ERROR(q.run_layer(members, progress, report));
  }
  progress.finish();
  QL_RETURN_IF_ERROR(write_checkpoint(ckpt, q, plan, ignored, out, report));
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace qlinear::quantize
