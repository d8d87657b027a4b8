#include "convert/canonical.h"

#include <fmt/format.h>

namespace qlinear {

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

// Short activation names for describe(); local so canonical.cc needs only quant's structs.
std::string_view act_short_name(ActQuant a) {
  switch (a) {
    case ActQuant::kNone:
      return "weight-only";
    case ActQuant::kDynamicToken:
      return "dyn-token";
    case ActQuant::kDynamicTensor:
      return "dyn-tensor";
    case ActQuant::kStaticTensor:
      return "static";
    case ActQuant::kDynamicGroup:
      return "dyn-group";
  }
  return "?";
}

}  // namespace

uint32_t IntWeights::code(int64_t k, int64_t n) const {
  const int pf = pack_factor();
  const uint32_t word = qweight[at((k / pf) * N + n)];
  return (word >> (bits * (k % pf))) & ((1u << bits) - 1u);
}

int64_t IntWeights::group_of(int64_t k) const {
  return g_idx.empty() ? k / group_size : g_idx[at(k)];
}

uint32_t IntWeights::zero(int64_t group, int64_t n) const {
  return zeros.empty() ? (1u << (bits - 1)) : zeros[at(group * N + n)];
}

float IntWeights::dequant(int64_t k, int64_t n) const {
  const int64_t g = group_of(k);
  const int diff = static_cast<int>(code(k, n)) - static_cast<int>(zero(g, n));
  return static_cast<float>(diff) * scales[at(g * N + n)];
}

float Fp8Weights::weight_scale(int64_t n, int64_t k) const {
  if (!is_block()) return scale[at(n)];
  const int64_t k_blocks = (K + block_k - 1) / block_k;
  return scale[at((n / block_n) * k_blocks + k / block_k)];
}

float Fp8Weights::dequant(int64_t n, int64_t k) const {
  return f8e4m3_to_f32(qweight[at(n * K + k)]) * weight_scale(n, k);
}

float DenseWeights::at(int64_t n, int64_t k) const {
  return load_as_f32(data.data(), dtype, static_cast<std::size_t>(n * K + k));
}

int64_t Canonical::K() const {
  return std::visit([](const auto& w) { return w.K; }, weights);
}

int64_t Canonical::N() const {
  return std::visit([](const auto& w) { return w.N; }, weights);
}

float Canonical::dequant(int64_t n, int64_t k) const {
  if (const auto* w = std::get_if<IntWeights>(&weights)) return w->dequant(k, n);
  if (const auto* w = std::get_if<Fp8Weights>(&weights)) return w->dequant(n, k);
  return std::get<DenseWeights>(weights).at(n, k);
}

std::string Canonical::describe() const {
  if (const auto* w = std::get_if<IntWeights>(&weights)) {
    const bool channel = w->g_idx.empty() && w->num_groups == 1;
    std::string text =
        fmt::format("int{} {} {}", w->bits,
                    channel ? std::string("channel") : fmt::format("g{}", w->group_size),
                    w->zeros.empty() ? "sym" : "asym");
    if (!w->g_idx.empty()) text += " act-order";
    return text;
  }
  if (const auto* w = std::get_if<Fp8Weights>(&weights)) {
    const std::string granularity =
        w->is_block()
            ? fmt::format("block{}x{}", w->block_n, w->block_k)
            : std::string(w->granularity == Fp8WeightGranularity::kTensor ? "tensor" : "channel");
    return fmt::format("fp8 {} {}", granularity, act_short_name(w->activation));
  }
  return fmt::format("dense {}", dtype_name(std::get<DenseWeights>(weights).dtype));
}

}  // namespace qlinear
