// Perplexity against two independent references: transformers' own float64 logits of a
// tiny checkpoint (tests/data/hf/llama3), and Hugging Face's sliding-window recipe written out
// here literally (labels masked with -100 per window, the shifted cross-entropy) over windows
// run one by one.
#include "model/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qlinear {
namespace {

const std::string kDir = std::string(QLINEAR_SOURCE_DIR) + "/tests/data/hf/llama3";

std::unique_ptr<Decoder> load(int64_t max_rows) {
  Result<Device> cpu = detect_device("cpu");
  EXPECT_TRUE(cpu.ok());
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = max_rows;
  options.progress = false;
  auto decoder = Decoder::load(kDir, *cpu, options);
  EXPECT_TRUE(decoder.ok()) << decoder.status().to_string();
  return decoder.ok() ? std::move(*decoder) : nullptr;
}

double nll_of(const double* row, int64_t vocab, int32_t target) {
  double max = row[0];
  for (int64_t v = 1; v < vocab; ++v) max = std::max(max, row[v]);
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
  return std::log(sum) - (row[target] - max);
}

TEST(Perplexity, OneWindowEqualsTransformersLogits) {
  std::ifstream in(kDir + "/golden.json");
  const auto ids = nlohmann::json::parse(in)["prompt_ids"].get<std::vector<int32_t>>();
  auto file = SafetensorsFile::open(kDir + "/golden.safetensors");
  ASSERT_TRUE(file.ok());
  const TensorInfo* info = (*file)->find("logits");
  ASSERT_NE(info, nullptr);
  const auto* logits = reinterpret_cast<const double*>((*file)->data(*info).data());
  const int64_t vocab = info->shape[1];
  double nll = 0.0;
  for (std::size_t t = 1; t < ids.size(); ++t) {
    nll += nll_of(logits + (t - 1) * vocab, vocab, ids[t]);
  }
  const double want = std::exp(nll / static_cast<double>(ids.size() - 1));

  auto decoder = load(32);
  ASSERT_NE(decoder, nullptr);
  PerplexityOptions options;
  options.ctx = 32;
  auto r = perplexity(*decoder, ids, options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->windows, 1);
  EXPECT_EQ(r->scored, static_cast<int64_t>(ids.size()) - 1);
  EXPECT_NEAR(r->perplexity, want, 2e-3 * want);
}

// Hugging Face's loop: for begin in range(0, n, stride): end = min(begin + ctx, n);
// trg = end - prev_end; labels = ids[begin:end]; labels[:-trg] = -100; the loss over the
// window's shifted positions whose label is not -100; prev_end = end; stop when end == n.
double hf_recipe(Decoder& decoder, const std::vector<int32_t>& ids, int64_t ctx, int64_t stride,
                 int64_t* scored) {
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t vocab = decoder.config().vocab;
  double nll = 0.0;
  *scored = 0;
  int64_t prev_end = 0;
  for (int64_t begin = 0; begin < n; begin += stride) {
    const int64_t end = std::min(begin + ctx, n);
    const int64_t trg = end - prev_end;
    const int64_t len = end - begin;
    std::vector<int32_t> window(ids.begin() + begin, ids.begin() + end);
    std::vector<int32_t> labels = window;
    for (int64_t i = 0; i < len - trg; ++i) labels[static_cast<std::size_t>(i)] = -100;
    std::vector<float> logits(static_cast<std::size_t>(len * vocab));
    EXPECT_TRUE(
        decoder.forward(window, 0, true, MatrixView::dense(logits.data(), DType::kF32, len, vocab))
            .ok());
    for (int64_t i = 1; i < len; ++i) {
      if (labels[static_cast<std::size_t>(i)] == -100) continue;
      std::vector<double> row(logits.begin() + (i - 1) * vocab, logits.begin() + i * vocab);
      nll += nll_of(row.data(), vocab, labels[static_cast<std::size_t>(i)]);
      ++*scored;
    }
    prev_end = end;
    if (end == n) break;
  }
  return std::exp(nll / static_cast<double>(*scored));
}

TEST(Perplexity, SlidingWindowsFollowHuggingFacesRecipe) {
  auto reference = load(32);
  auto chunked = load(5);  // windows fed 5 tokens per forward
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(chunked, nullptr);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(reference->config().vocab - 1));
  for (int64_t n : {2, 17, 40, 41}) {
    std::vector<int32_t> ids(static_cast<std::size_t>(n));
    for (auto& v : ids) v = id(rng);
    for (auto [ctx, stride] : {std::pair<int64_t, int64_t>{16, 16}, {16, 5}, {12, 1}, {32, 31}}) {
      int64_t want_scored = 0;
      const double want = hf_recipe(*reference, ids, ctx, stride, &want_scored);
      PerplexityOptions options;
      options.ctx = ctx;
      options.stride = stride;
      auto got = perplexity(*chunked, ids, options);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(got->scored, want_scored) << n << " " << ctx << " " << stride;
      // Overlapping windows score every token but the text's first; windows that do not overlap
      // (stride == ctx) cannot score their own first token either.
      EXPECT_EQ(got->scored, stride < ctx ? n - 1 : n - got->windows) << n << " " << ctx;
      EXPECT_NEAR(got->perplexity, want, 1e-4 * want) << n << " " << ctx << " " << stride;
    }
  }
}

TEST(Perplexity, RefusesWhatCannotBeScored) {
  auto decoder = load(32);
  ASSERT_NE(decoder, nullptr);
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  PerplexityOptions wide;
  wide.ctx = 65;  // the KV cache holds 64
  EXPECT_NE(perplexity(*decoder, ids, wide).status().message().find("65"), std::string::npos);
  PerplexityOptions stride;
  stride.ctx = 8;
  stride.stride = 9;
  EXPECT_FALSE(perplexity(*decoder, ids, stride).ok());
  EXPECT_FALSE(perplexity(*decoder, std::vector<int32_t>{1}, PerplexityOptions{}).ok());
  const std::vector<int32_t> outside = {1, static_cast<int32_t>(decoder->config().vocab)};
  auto r = perplexity(*decoder, outside, PerplexityOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("vocab"), std::string::npos);
}

}  // namespace
}  // namespace qlinear
