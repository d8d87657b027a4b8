// LinearProblem and its string form. Every QLINEAR_VERBOSE=dispatch line carries one, and
// `qlinear bench` parses it back, so the grammar is a stable interface:
//
//   problem  := head ':' token (':' token)*        tokens after the head in any order, each once
//   head     := 'int' BITS | 'fp8' | 'dense'
//   int      := 'g' GROUP          group size (canonical: > 0, == K when channelwise)   required
//             | 'zp'               asymmetric zero points
//             | 'ao'               act-order (a non-trivial g_idx)
//             | 'a8'               int8 activations (asked for with --int8-activations)
//   fp8      := 'tensor' | 'channel' | 'block' BN 'x' BK    weight scale granularity   required
//             | 'dyn-token' | 'dyn-tensor' | 'static-tensor' | 'dyn-group'
//                                  the checkpoint's activation quantization (absent: none)
//             | 'w8a8' | 'w8a16'   the execution mode chosen by the selector (absent: undecided)
//   dense    := 'f32' | 'bf16' | 'f16'    weight dtype                               required
//   common   := 'K' INT | 'N' INT   local (this rank's) in/out features                 required
//             | 'tp' INT            tensor-parallel size (default 1)
//             | 'Kf' INT | 'Nf' INT full K / N before sharding (default: the local ones)
//             | 'a=' DTYPE          activation dtype (default bf16)
//             | 'o=' DTYPE          output dtype (default f32)
//             | 'bias'
//             | 'swiglu'            the output is [gate | up] of a SwiGLU MLP (a layout hint:
//                                   LinearOptions::swiglu_halves)
//             | 'M' LO '-' HI | 'M' LO '+'   rows of x covered (default M1+: any)
//
// e.g. int4:g128:zp:ao:K4096:N11008:tp2:Kf8192:Nf11008:a=bf16
//      fp8:channel:dyn-token:w8a8:K4096:N4096:a=bf16     dense:bf16:K4096:N128256:a=bf16
#include "kernels/problem.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/shard.h"

namespace qlinear {
namespace {

constexpr std::pair<ActQuant, std::string_view> kActTokens[] = {
    {ActQuant::kDynamicToken, "dyn-token"},
    {ActQuant::kDynamicTensor, "dyn-tensor"},
    {ActQuant::kStaticTensor, "static-tensor"},
    {ActQuant::kDynamicGroup, "dyn-group"},
};

constexpr DType kFloatDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::string_view act_token(ActQuant act) {
  for (const auto& [value, token] : kActTokens) {
    if (value == act) return token;
  }
  return "none";
}

std::optional<DType> float_dtype(std::string_view name) {
  for (DType dtype : kFloatDtypes) {
    if (dtype_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

std::optional<int64_t> parse_int(std::string_view digits) {
  int64_t value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// Parses one problem string; keeps the text and token position for error messages.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<LinearProblem> run() {
    const std::vector<std::string_view> tokens = split(text_, ':');
    QL_RETURN_IF_ERROR(parse_head(tokens[0]));
    for (size_t i = 1; i < tokens.size(); ++i) {
      index_ = i;
      QL_RETURN_IF_ERROR(parse_token(tokens[i]));
    }
    return finish();
  }

 private:
  template <class... Args>
  Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return make_error(ErrorCode::kInvalidArgument, "problem \"{}\": token {}: {}", text_,
                      index_ + 1, fmt::format(format, std::forward<Args>(args)...));
  }

  Status parse_head(std::string_view head) {
    if (head == "fp8") {
      problem_.scheme = WeightScheme::kFp8;
    } else if (head == "dense") {
      problem_.scheme = WeightScheme::kDense;
    } else if (head.starts_with("int")) {
      const auto bits = parse_int(head.substr(3));
      if (!bits || *bits < 1 || *bits > 8) {
        return error("\"{}\" needs a bit width 1..8 after \"int\" (e.g. int4)", head);
      }
      problem_.scheme = WeightScheme::kInt;
      problem_.bits = static_cast<int>(*bits);
    } else {
      return error("\"{}\" is not a scheme; expected int<bits>, fp8 or dense", head);
    }
    return {};
  }

  // Marks a token kind as seen; a second one is an error.
  Status once(std::string_view kind, std::string_view token) {
    if (!seen_.insert(std::string(kind)).second) {
      return error("\"{}\" repeats {} (given earlier)", token, kind);
    }
    return {};
  }

  Status positive(std::string_view token, std::string_view digits, int64_t* out) {
    const auto value = parse_int(digits);
    if (!value || *value <= 0) return error("\"{}\" needs a positive integer", token);
    *out = *value;
    return {};
  }

  Status parse_token(std::string_view token) {
    int64_t value = 0;
    // Shape tokens first: "Kf" must win over "K".
    if (token.starts_with("Kf")) {
      QL_RETURN_IF_ERROR(once("Kf", token));
      QL_RETURN_IF_ERROR(positive(token, token.substr(2), &problem_.full_K));
      return {};
    }
    if (token.starts_with("Nf")) {
      QL_RETURN_IF_ERROR(once("Nf", token));
      QL_RETURN_IF_ERROR(positive(token, token.substr(2), &problem_.full_N));
      return {};
    }
    if (token.starts_with("M")) {
      QL_RETURN_IF_ERROR(once("M", token));
      return parse_m_range(token);
    }
    if (token.starts_with("K")) {
      QL_RETURN_IF_ERROR(once("K", token));
      QL_RETURN_IF_ERROR(positive(token, token.substr(1), &problem_.K));
      return {};
    }
    if (token.starts_with("N")) {
      QL_RETURN_IF_ERROR(once("N", token));
      QL_RETURN_IF_ERROR(positive(token, token.substr(1), &problem_.N));
      return {};
    }
    if (token.starts_with("tp")) {
      QL_RETURN_IF_ERROR(once("tp", token));
      QL_RETURN_IF_ERROR(positive(token, token.substr(2), &value));
      problem_.tp = static_cast<int>(value);
      return {};
    }
    if (token.starts_with("a=") || token.starts_with("o=")) {
      const bool act = token[0] == 'a';
      QL_RETURN_IF_ERROR(once(act ? "a=" : "o=", token));
      const auto dtype = float_dtype(token.substr(2));
      if (!dtype) return error("\"{}\" needs a dtype f32, bf16 or f16", token);
      (act ? problem_.act_dtype : problem_.out_dtype) = *dtype;
      return {};
    }
    if (token == "bias") {
      QL_RETURN_IF_ERROR(once("bias", token));
      problem_.has_bias = true;
      return {};
    }
    if (token == "swiglu") {
      QL_RETURN_IF_ERROR(once("swiglu", token));
      problem_.swiglu_halves = true;
      return {};
    }
    switch (problem_.scheme) {
      case WeightScheme::kInt:
        return parse_int_token(token);
      case WeightScheme::kFp8:
        return parse_fp8_token(token);
      case WeightScheme::kDense:
        return parse_dense_token(token);
    }
    return error("\"{}\" is not a known token", token);
  }

  // M<lo>-<hi> or M<lo>+ with 1 <= lo <= hi.
  Status parse_m_range(std::string_view token) {
    const std::string_view body = token.substr(1);
    const auto bad = [&] {
      return error("\"{}\" needs an M range M<lo>-<hi> or M<lo>+ (1 <= lo <= hi < 2^40)", token);
    };
    if (body.ends_with("+")) {
      const auto lo = parse_int(body.substr(0, body.size() - 1));
      if (!lo || *lo < 1 || *lo >= kUnboundedM) return bad();
      problem_.m_min = *lo;
      problem_.m_max = kUnboundedM;
      return {};
    }
    const auto parts = split(body, '-');
    const auto lo = parts.size() == 2 ? parse_int(parts[0]) : std::nullopt;
    const auto hi = parts.size() == 2 ? parse_int(parts[1]) : std::nullopt;
    if (!lo || !hi || *lo < 1 || *hi < *lo || *hi >= kUnboundedM) return bad();
    problem_.m_min = *lo;
    problem_.m_max = *hi;
    return {};
  }

  Status parse_int_token(std::string_view token) {
    if (token == "zp") {
      QL_RETURN_IF_ERROR(once("zp", token));
      problem_.has_zeros = true;
      return {};
    }
    if (token == "ao") {
      QL_RETURN_IF_ERROR(once("ao", token));
      problem_.act_order = true;
      return {};
    }
    if (token == "a8") {
      QL_RETURN_IF_ERROR(once("a8", token));
      problem_.int8_activations = true;
      return {};
    }
    if (token.starts_with("g")) {
      QL_RETURN_IF_ERROR(once("a group size", token));
      int64_t group = 0;
      QL_RETURN_IF_ERROR(positive(token, token.substr(1), &group));
      problem_.group_size = static_cast<int>(group);
      return {};
    }
    return error(
        "\"{}\" is not a token of an int problem; expected g<size>, zp, ao, a8, K<n>, N<n>, "
        "tp<n>, Kf<n>, Nf<n>, a=<dtype>, o=<dtype>, M<range>, bias or swiglu",
        token);
  }

  Status parse_fp8_token(std::string_view token) {
    if (token == "tensor" || token == "channel") {
      QL_RETURN_IF_ERROR(once("a weight granularity", token));
      problem_.fp8_weight =
          token == "tensor" ? Fp8WeightGranularity::kTensor : Fp8WeightGranularity::kChannel;
      return {};
    }
    if (token.starts_with("block")) {
      QL_RETURN_IF_ERROR(once("a weight granularity", token));
      const auto dims = split(token.substr(5), 'x');
      const auto bn = dims.size() == 2 ? parse_int(dims[0]) : std::nullopt;
      const auto bk = dims.size() == 2 ? parse_int(dims[1]) : std::nullopt;
      if (!bn || !bk || *bn <= 0 || *bk <= 0) {
        return error("\"{}\" needs the block shape as block<bn>x<bk> (e.g. block128x128)", token);
      }
      problem_.fp8_weight = Fp8WeightGranularity::kBlock;
      problem_.block_n = static_cast<int>(*bn);
      problem_.block_k = static_cast<int>(*bk);
      return {};
    }
    for (const auto& [act, name] : kActTokens) {
      if (token != name) continue;
      QL_RETURN_IF_ERROR(once("an activation quantization", token));
      problem_.act_quant = act;
      return {};
    }
    if (token == "w8a8" || token == "w8a16") {
      QL_RETURN_IF_ERROR(once("an FP8 mode", token));
      problem_.fp8_mode = token == "w8a8" ? Fp8Mode::kW8A8 : Fp8Mode::kW8A16;
      return {};
    }
    return error(
        "\"{}\" is not a token of an fp8 problem; expected tensor, channel, "
        "block<bn>x<bk>, dyn-token, dyn-tensor, static-tensor, dyn-group, w8a8, w8a16, "
        "K<n>, N<n>, tp<n>, Kf<n>, Nf<n>, a=<dtype>, o=<dtype>, M<range>, bias or swiglu",
        token);
  }

  Status parse_dense_token(std::string_view token) {
    if (const auto dtype = float_dtype(token)) {
      QL_RETURN_IF_ERROR(once("a weight dtype", token));
      problem_.weight_dtype = *dtype;
      return {};
    }
    return error(
        "\"{}\" is not a token of a dense problem; expected f32, bf16, f16, K<n>, N<n>, "
        "tp<n>, Kf<n>, Nf<n>, a=<dtype>, o=<dtype>, M<range>, bias or swiglu",
        token);
  }

  Result<LinearProblem> finish() {
    auto missing = [&](std::string_view what) {
      return make_error(ErrorCode::kInvalidArgument, "problem \"{}\": missing {}", text_, what);
    };
    if (!seen_.contains("K")) return missing("the K<n> token (local in_features)");
    if (!seen_.contains("N")) return missing("the N<n> token (local out_features)");
    if (problem_.scheme == WeightScheme::kInt && !seen_.contains("a group size")) {
      return missing("the g<size> token (group size)");
    }
    if (problem_.scheme == WeightScheme::kFp8 && !seen_.contains("a weight granularity")) {
      return missing("the weight granularity token (tensor, channel or block<bn>x<bk>)");
    }
    if (problem_.scheme == WeightScheme::kDense && !seen_.contains("a weight dtype")) {
      return missing("the weight dtype token (f32, bf16 or f16)");
    }
    if (problem_.fp8_mode == Fp8Mode::kW8A8 && problem_.act_quant == ActQuant::kNone) {
      return make_error(ErrorCode::kInvalidArgument,
                        "problem \"{}\": w8a8 needs an activation quantization token "
                        "(dyn-token, dyn-tensor, static-tensor or dyn-group)",
                        text_);
    }
    if (!seen_.contains("Kf")) problem_.full_K = problem_.K;
    if (!seen_.contains("Nf")) problem_.full_N = problem_.N;
    if (problem_.full_K < problem_.K || problem_.full_N < problem_.N) {
      return make_error(ErrorCode::kInvalidArgument,
                        "problem \"{}\": full shape Kf{} Nf{} is smaller than the local K{} N{}",
                        text_, problem_.full_K, problem_.full_N, problem_.K, problem_.N);
    }
    return problem_;
  }

  std::string_view text_;
  size_t index_ = 0;
  std::set<std::string> seen_;
  LinearProblem problem_;
};

}  // namespace

std::string_view fp8_mode_name(Fp8Mode mode) {
  switch (mode) {
    case Fp8Mode::kNone:
      return "none";
    case Fp8Mode::kW8A8:
      return "w8a8";
    case Fp8Mode::kW8A16:
      return "w8a16";
  }
  return "unknown";
}

std::string LinearProblem::to_string() const {
  std::vector<std::string> tokens;
  switch (scheme) {
    case WeightScheme::kInt:
      tokens.push_back(fmt::format("int{}", bits));
      tokens.push_back(fmt::format("g{}", group_size));
      if (has_zeros) tokens.emplace_back("zp");
      if (act_order) tokens.emplace_back("ao");
      if (int8_activations) tokens.emplace_back("a8");
      break;
    case WeightScheme::kFp8:
      tokens.emplace_back("fp8");
      if (fp8_weight == Fp8WeightGranularity::kBlock) {
        tokens.push_back(fmt::format("block{}x{}", block_n, block_k));
      } else {
        tokens.emplace_back(fp8_weight == Fp8WeightGranularity::kTensor ? "tensor" : "channel");
      }
      if (act_quant != ActQuant::kNone) tokens.emplace_back(act_token(act_quant));
      if (fp8_mode != Fp8Mode::kNone) tokens.emplace_back(fp8_mode_name(fp8_mode));
      break;
    case WeightScheme::kDense:
      tokens.emplace_back("dense");
      tokens.emplace_back(dtype_name(weight_dtype));
      break;
  }
  tokens.push_back(fmt::format("K{}", K));
  tokens.push_back(fmt::format("N{}", N));
  if (tp != 1) tokens.push_back(fmt::format("tp{}", tp));
  if (tp != 1 || full_K != K || full_N != N) {
    tokens.push_back(fmt::format("Kf{}", full_K));
    tokens.push_back(fmt::format("Nf{}", full_N));
  }
  tokens.push_back(fmt::format("a={}", dtype_name(act_dtype)));
  if (out_dtype != DType::kF32) tokens.push_back(fmt::format("o={}", dtype_name(out_dtype)));
  if (has_bias) tokens.emplace_back("bias");
  if (swiglu_halves) tokens.emplace_back("swiglu");
  if (m_min != 1 || !m_unbounded()) tokens.push_back(m_range_string());
  return fmt::format("{}", fmt::join(tokens, ":"));
}

std::string LinearProblem::m_range_string() const {
  if (m_unbounded()) return fmt::format("M{}+", m_min);
  return fmt::format("M{}-{}", m_min, m_max);
}

Result<LinearProblem> LinearProblem::parse(std::string_view text) { return Parser(text).run(); }

LinearProblem LinearProblem::from_canonical(const Canonical& weights, int tp) {
  LinearProblem problem;
  if (const auto* w = std::get_if<IntWeights>(&weights.weights)) {
    problem.scheme = WeightScheme::kInt;
    problem.bits = w->bits;
    problem.group_size = w->group_size;
    problem.has_zeros = !w->zeros.empty();
    problem.act_order = !w->g_idx.empty();
    problem.has_bias = !w->bias.empty();
  } else if (const auto* f = std::get_if<Fp8Weights>(&weights.weights)) {
    problem.scheme = WeightScheme::kFp8;
    problem.fp8_weight = f->granularity;
    if (f->is_block()) {
      problem.block_n = f->block_n;
      problem.block_k = f->block_k;
    }
    problem.act_quant = f->activation;
    problem.has_bias = !f->bias.empty();
  } else if (const auto* d = std::get_if<DenseWeights>(&weights.weights)) {
    problem.scheme = WeightScheme::kDense;
    problem.weight_dtype = d->dtype;
    problem.has_bias = !d->bias.empty();
  }
  problem.K = weights.K();
  problem.N = weights.N();
  problem.tp = tp < 1 ? 1 : tp;
  problem.full_K = problem.K;
  problem.full_N = problem.N;
  if (problem.tp > 1) {
    // `weights` is one rank's view: the parallel kind says which extent was split.
    if (parallel_kind_for(weights.name) == ParallelKind::kColumn) {
      problem.full_N = problem.N * problem.tp;
    } else {
      problem.full_K = problem.K * problem.tp;
    }
  }
  return problem;
}

std::string LinearProblem::scheme_string() const {
  switch (scheme) {
    case WeightScheme::kInt: {
      std::string text = fmt::format("w{}a{} ", bits, int8_activations ? 8 : 16);
      text += group_size == K && !act_order ? "channelwise" : fmt::format("g{}", group_size);
      if (has_zeros) text += " zp";
      if (act_order) text += " act-order";
      return text;
    }
    case WeightScheme::kFp8: {
      std::string text = "fp8 ";
      text += fp8_weight == Fp8WeightGranularity::kBlock
                  ? fmt::format("block{}x{}", block_n, block_k)
                  : (fp8_weight == Fp8WeightGranularity::kTensor ? "tensor" : "channel");
      if (fp8_mode != Fp8Mode::kNone) text += fmt::format(" {}", fp8_mode_name(fp8_mode));
      if (act_quant != ActQuant::kNone) {
        text += fp8_mode == Fp8Mode::kW8A16 ? fmt::format(" (checkpoint: {})", act_token(act_quant))
                                            : fmt::format(" {}", act_token(act_quant));
      }
      return text;
    }
    case WeightScheme::kDense:
      return fmt::format("dense {}", dtype_name(weight_dtype));
  }
  return "unknown";
}

}  // namespace qlinear
