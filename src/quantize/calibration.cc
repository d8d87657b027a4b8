#include "quantize/calibration.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "core/tensor.h"
#include "io/json_text.h"
#include "model/decoder.h"
#include "qlinear/device.h"
#include "text/tokenizer.h"

namespace qlinear::quantize {

void InputStats::add(ConstMatrixView x) {
  const int64_t T = x.rows();
  if (K == 0) {
    K = x.cols();
    gram.assign(static_cast<size_t>(K * K), 0.0);
    abs_sum.assign(static_cast<size_t>(K), 0.0);
  }
  std::vector<double> rows_f64(static_cast<size_t>(T * K));
  for (int64_t t = 0; t < T; ++t) {
    const auto* row = static_cast<const float*>(x.row(t));
    for (int64_t k = 0; k < K; ++k) {
      const double v = row[k];
      rows_f64[static_cast<size_t>(t * K + k)] = v;
      abs_sum[static_cast<size_t>(k)] += std::fabs(v);
      abs_max = std::max(abs_max, std::fabs(v));
    }
  }
  // Lower triangle of X^T X, mirrored on read.
  cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, static_cast<int>(K), static_cast<int>(T), 1.0,
              rows_f64.data(), static_cast<int>(K), 1.0, gram.data(), static_cast<int>(K));
  rows += T;
}

std::vector<double> InputStats::gram_mean() const {
  std::vector<double> g(gram.size());
  const double inv = rows > 0 ? 1.0 / static_cast<double>(rows) : 0.0;
  for (int64_t i = 0; i < K; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      const double v = gram[static_cast<size_t>(i * K + j)] * inv;
      g[static_cast<size_t>(i * K + j)] = v;
      g[static_cast<size_t>(j * K + i)] = v;
    }
  }
  return g;
}

std::vector<double> InputStats::abs_mean() const {
  std::vector<double> m(abs_sum.size());
  for (size_t k = 0; k < m.size(); ++k) m[k] = rows > 0 ? abs_sum[k] / double(rows) : 0.0;
  return m;
}

std::string input_key(std::string_view layer) {
  const std::string s(layer);
  // Fused names (the runner's) are their own key; unfused shards map onto them.
  for (std::string_view proj : {".q_proj", ".k_proj", ".v_proj"}) {
    if (s.ends_with(proj)) return s.substr(0, s.size() - proj.size()) + ".qkv_proj";
  }
  for (std::string_view proj : {".gate_proj", ".up_proj"}) {
    if (s.ends_with(proj)) return s.substr(0, s.size() - proj.size()) + ".gate_up_proj";
  }
  return s;
}

const InputStats* Calibration::find(std::string_view layer) const {
  const auto it = inputs.find(input_key(layer));
  return it == inputs.end() ? nullptr : &it->second;
}

Result<Calibration> calibrate(const CalibrationOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  QL_ASSIGN_OR_RETURN(const std::string corpus, io_internal::read_text_file(o.text_file));
  QL_ASSIGN_OR_RETURN(const text::Tokenizer tokenizer, text::Tokenizer::load(o.model_dir));
  QL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.encode(corpus, true));
  if (ids.size() < 2) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--calib {}: {} tokens; calibration needs text (at least 2 tokens)",
                      o.text_file, ids.size());
  }
  if (static_cast<int64_t>(ids.size()) > o.max_tokens)
    ids.resize(static_cast<size_t>(o.max_tokens));

  Calibration calib;
  DecoderOptions dopts;
  dopts.threads = o.threads;
  dopts.progress = false;
  dopts.max_rows = 128;
  dopts.ctx = o.seq_len;
  dopts.on_linear_input = [&](std::string_view layer, ConstMatrixView x) {
    // Siblings reading the same rows are counted once (their first member's call).
    if (layer.ends_with(".k_proj") || layer.ends_with(".v_proj") || layer.ends_with(".up_proj")) {
      return;
    }
    if (layer == "lm_head" && !o.with_lm_head) return;
    calib.inputs[input_key(layer)].add(x);
  };
  QL_ASSIGN_OR_RETURN(const Device cpu, detect_device("cpu"));
  QL_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, Decoder::load(o.model_dir, cpu, dopts));
  const int64_t seq = std::min(o.seq_len, decoder->context());
  QL_ASSIGN_OR_RETURN(Tensor logits, Tensor::allocate(DType::kF32, {1, decoder->config().vocab}));
  const auto total = static_cast<int64_t>(ids.size());
  for (int64_t begin = 0; begin < total; begin += seq) {
    const int64_t len = std::min(seq, total - begin);
    for (int64_t pos = 0; pos < len; pos += decoder->max_rows()) {
      const int64_t count = std::min(decoder->max_rows(), len - pos);
      const std::span<const int32_t> chunk(ids.data() + begin + pos, static_cast<size_t>(count));
      QL_RETURN_IF_ERROR(decoder->forward(chunk, pos, false, logits.matrix()));
    }
    ++calib.sequences;
  }
  calib.tokens = total;
  calib.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return calib;
}

}  // namespace qlinear::quantize
