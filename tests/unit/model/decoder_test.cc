// The decoder against an independent reference: a plain double-precision Llama forward written
// here from the fixtures' exact weights (FixtureLayer::weight, packed by src/fixtures without
// convert/), the embeddings and norms read straight from the safetensors file, RoPE and causal
// attention from their textbook definitions. Every format of the fixtures runs through the
// decoder (registry kernels, f32 activations) and must match; W8A8 FP8 layers quantize the
// reference's activations with the one activation contract (activation_quant.h) as the kernels
// do. Also: --tp 2/3/4 equal tp 1, thread counts and chunked prefill give the same logits, and
// the decode of one token at a time equals a whole-sequence forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <numbers>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "fixtures/fixtures.h"
#include "io/safetensors.h"
#include "kernels/common/activation_quant.h"
#include "kernels/cpu_features.h"
#include "model/decoder.h"
#include "model/generation.h"
#include "model/sampler.h"

namespace qlinear {
namespace {

using Matrix = std::vector<double>;  // row-major

struct Reference {
  FixtureModel model;
  std::map<std::string, std::vector<double>> tensors;  // embeddings and norms, as doubles
  const FixtureLayer& layer(const std::string& name) const { return *model.find(name); }
};

Reference load_reference(FixtureFormat format, const std::string& dir) {
  Reference ref;
  auto model = write_fixture(format, dir);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  ref.model = std::move(model).value();
  for (const std::string& file : ref.model.files) {
    auto st = SafetensorsFile::open(dir + "/" + file);
    EXPECT_TRUE(st.ok()) << st.status().to_string();
    for (const TensorInfo& t : (*st)->tensors()) {
      if (t.name.find("norm") == std::string::npos &&
          t.name.find("embed_tokens") == std::string::npos) {
        continue;
      }
      std::vector<float> values(static_cast<std::size_t>(shape_numel(t.shape)));
      convert_to_f32((*st)->data(t).data(), t.dtype, values.size(), values.data());
      ref.tensors[t.name] = std::vector<double>(values.begin(), values.end());
    }
  }
  return ref;
}

// The static input scale a fused layer quantizes with: the largest of its shards' (the rule of
// convert/fuse.cc and of vLLM, so no shard's activations clip).
double fused_input_scale(const Reference& ref, std::initializer_list<std::string> names) {
  double scale = 0.0;
  for (const std::string& name : names) scale = std::max(scale, ref.layer(name).input_scale);
  return scale;
}

// y [T, N] = x [T, K] W^T with W from the fixture (and W8A8 activation quantization when asked,
// static layers with `input_scale`, or the layer's own when that is 0).
Matrix linear(const Reference& ref, const std::string& name, const Matrix& x, int64_t T, bool w8a8,
              double input_scale = 0.0) {
  const FixtureLayer& l = ref.layer(name);
  if (input_scale == 0.0) input_scale = l.input_scale;
  Matrix xin = x;
  if (w8a8 && l.spec.fp8 && l.spec.activation != ActQuant::kNone) {
    std::vector<float> xf(x.begin(), x.end());
    LinearProblem p;
    p.scheme = WeightScheme::kFp8;
    p.fp8_weight = l.spec.granularity;
    p.block_n = l.spec.block_n;
    p.block_k = l.spec.block_k;
    p.act_quant = l.spec.activation;
    auto q = quantize_activations(xf.data(), T, l.K, w8a8_act_quant(p),
                                  static_cast<float>(input_scale), w8a8_act_group_k(p));
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    std::vector<float> back(xf.size());
    dequantize_activations(*q, back.data());
    xin.assign(back.begin(), back.end());
  }
  Matrix y(static_cast<std::size_t>(T * l.N), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < l.N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < l.K; ++k) acc += xin[t * l.K + k] * l.at(n, k);
      y[t * l.N + n] = acc;
    }
  }
  return y;
}

Matrix rms_norm(const Matrix& x, const std::vector<double>& w, int64_t T, int64_t n, double eps) {
  Matrix y(x.size());
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += x[t * n + i] * x[t * n + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[t * n + i] = w[i] * x[t * n + i] * inv;
  }
  return y;
}

// Rotate-half RoPE on every head of x [T, heads * d] at positions 0..T-1.
void rope(Matrix& x, int64_t T, int64_t heads, int64_t d, double theta) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + t * heads * d + h * d;
      for (int64_t i = 0; i < d / 2; ++i) {
        const double inv_freq = 1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / d);
        const double a = static_cast<double>(t) * inv_freq;
        const double x1 = v[i];
        const double x2 = v[i + d / 2];
        v[i] = x1 * std::cos(a) - x2 * std::sin(a);
        v[i + d / 2] = x2 * std::cos(a) + x1 * std::sin(a);
      }
    }
  }
}

// Logits [T, vocab] of tokens at positions 0..T-1.
Matrix reference_logits(const Reference& ref, const std::vector<int32_t>& tokens, bool w8a8) {
  const FixtureOptions& o = ref.model.options;
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t H = o.hidden_size;
  const int64_t heads = o.num_heads;
  const int64_t kv = o.num_kv_heads;
  const int64_t d = o.head_dim;
  const double eps = 1e-5;
  Matrix x(static_cast<std::size_t>(T * H));
  const std::vector<double>& embed = ref.tensors.at("model.embed_tokens.weight");
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < H; ++i) x[t * H + i] = embed[tokens[t] * H + i];
  }
  for (int l = 0; l < o.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Matrix h = rms_norm(x, ref.tensors.at(p + "input_layernorm.weight"), T, H, eps);
    const double qkv_scale = fused_input_scale(
        ref, {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"});
    Matrix q = linear(ref, p + "self_attn.q_proj", h, T, w8a8, qkv_scale);
    Matrix k = linear(ref, p + "self_attn.k_proj", h, T, w8a8, qkv_scale);
    Matrix v = linear(ref, p + "self_attn.v_proj", h, T, w8a8, qkv_scale);
    rope(q, T, heads, d, 10000.0);
    rope(k, T, kv, d, 10000.0);
    Matrix attn(static_cast<std::size_t>(T * heads * d), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t hh = 0; hh < heads; ++hh) {
        const int64_t g = hh / (heads / kv);
        std::vector<double> s(static_cast<std::size_t>(t + 1));
        double m = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0.0;
          for (int64_t i = 0; i < d; ++i)
            dot += q[t * heads * d + hh * d + i] * k[j * kv * d + g * d + i];
          s[j] = dot / std::sqrt(static_cast<double>(d));
          m = std::max(m, s[j]);
        }
        double z = 0.0;
        for (double& e : s) z += (e = std::exp(e - m));
        for (int64_t j = 0; j <= t; ++j) {
          for (int64_t i = 0; i < d; ++i) {
            attn[t * heads * d + hh * d + i] += s[j] / z * v[j * kv * d + g * d + i];
          }
        }
      }
    }
    Matrix out = linear(ref, p + "self_attn.o_proj", attn, T, w8a8);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += out[i];
    h = rms_norm(x, ref.tensors.at(p + "post_attention_layernorm.weight"), T, H, eps);
    const double gate_up_scale = fused_input_scale(ref, {p + "mlp.gate_proj", p + "mlp.up_proj"});
    const Matrix gate = linear(ref, p + "mlp.gate_proj", h, T, w8a8, gate_up_scale);
    const Matrix up = linear(ref, p + "mlp.up_proj", h, T, w8a8, gate_up_scale);
    Matrix act(gate.size());
    for (std::size_t i = 0; i < act.size(); ++i)
      act[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
    out = linear(ref, p + "mlp.down_proj", act, T, w8a8);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += out[i];
  }
  const Matrix h = rms_norm(x, ref.tensors.at("model.norm.weight"), T, H, eps);
  return linear(ref, "lm_head", h, T, w8a8);
}

double relative_error(const std::vector<float>& got, const Matrix& want) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

std::vector<float> decoder_logits(const std::string& dir, const std::vector<int32_t>& tokens,
                                  DecoderOptions options, const std::string& device_spec = "cpu") {
  options.progress = false;
  Result<Device> device = detect_device(device_spec);
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  if (!device.ok()) return {};
  auto decoder = Decoder::load(dir, *device, options);
  EXPECT_TRUE(decoder.ok()) << decoder.status().to_string();
  if (!decoder.ok()) return {};
  const int64_t vocab = (*decoder)->config().vocab;
  std::vector<float> logits;
  for (std::size_t start = 0; start < tokens.size();) {
    const std::size_t n =
        std::min<std::size_t>(static_cast<std::size_t>(options.max_rows), tokens.size() - start);
    std::vector<float> chunk(n * static_cast<std::size_t>(vocab));
    const Status s = (*decoder)->forward(
        std::span<const int32_t>(tokens.data() + start, n), static_cast<int64_t>(start), true,
        MatrixView::dense(chunk.data(), DType::kF32, static_cast<int64_t>(n), vocab));
    EXPECT_TRUE(s.ok()) << s.to_string();
    logits.insert(logits.end(), chunk.begin(), chunk.end());
    start += n;
  }
  return logits;
}

std::string dir_for(const std::string& name) {
  return std::string(QLINEAR_TEST_TMPDIR) + "/decoder/" + name;
}

const std::vector<int32_t> kTokens = {3, 17, 250, 9, 9, 128, 64, 1, 200, 33, 5};

// Batched decode against each sequence alone: three sequences of different prompts (so different
// positions) prefilled into one decoder's cache, then three decode_batch steps at M = 3; each row
// must be that sequence's logits from a one-sequence decoder fed its prompt and tokens. Each step
// and some sequence-0 calls also run with the argmax on the device (decode_batch_greedy,
// forward_greedy), whose ids must be greedy_token of the logits. Returns the largest relative
// error over the sequences.
double batched_against_alone(const std::string& dir, DecoderOptions options,
                             const std::string& device_spec) {
  options.progress = false;
  const std::vector<std::vector<int32_t>> prompts = {{kTokens.begin(), kTokens.begin() + 5},
                                                     {kTokens.begin() + 2, kTokens.begin() + 9},
                                                     {kTokens.begin() + 4, kTokens.end()}};
  const std::vector<std::vector<int32_t>> steps = {{7, 8, 9}, {10, 11, 12}, {13, 14, 15}};
  const auto B = static_cast<int64_t>(prompts.size());
  Result<Device> device = detect_device(device_spec);
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  if (!device.ok()) return 1.0;
  DecoderOptions batched = options;
  batched.sequences = B;
  auto decoder = Decoder::load(dir, *device, batched);
  EXPECT_TRUE(decoder.ok()) << decoder.status().to_string();
  if (!decoder.ok()) return 1.0;
  const int64_t vocab = (*decoder)->config().vocab;
  std::vector<float> logits(static_cast<std::size_t>(B * vocab));
  // Sequence 2 first: the order of the prompts must not matter.
  for (int64_t s : {int64_t{2}, int64_t{0}, int64_t{1}}) {
    const std::vector<int32_t>& prompt = prompts[static_cast<std::size_t>(s)];
    const Status st = (*decoder)->forward_sequence(
        s, prompt, 0, false, MatrixView::dense(logits.data(), DType::kF32, 1, vocab));
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  std::vector<std::vector<float>> got(static_cast<std::size_t>(B));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    std::vector<int32_t> positions;
    for (const auto& p : prompts) positions.push_back(static_cast<int32_t>(p.size() + k));
    const Status st = (*decoder)->decode_batch(
        steps[k], positions, MatrixView::dense(logits.data(), DType::kF32, B, vocab));
    EXPECT_TRUE(st.ok()) << st.to_string();
    // The same step again with the argmax on the device (the cache rows rewritten with the same
    // values): each row's id is greedy_token of its logits.
    std::vector<int32_t> ids(static_cast<std::size_t>(B), -1);
    const Status greedy = (*decoder)->decode_batch_greedy(steps[k], positions, ids);
    EXPECT_TRUE(greedy.ok()) << greedy.to_string();
    for (int64_t s = 0; s < B; ++s) {
      const std::span<const float> row(logits.data() + s * vocab, static_cast<std::size_t>(vocab));
      EXPECT_EQ(ids[static_cast<std::size_t>(s)], greedy_token(row))
          << "decode_batch_greedy step " << k << " sequence " << s;
      got[static_cast<std::size_t>(s)].insert(got[static_cast<std::size_t>(s)].end(),
                                              logits.begin() + s * vocab,
                                              logits.begin() + (s + 1) * vocab);
    }
  }
  // forward_greedy (sequence 0): a prompt chunk and two one-token steps, each run twice, with
  // logits and with the argmax on the device.
  const auto p0 = static_cast<int64_t>(prompts[0].size() + steps.size());
  const std::vector<std::pair<std::vector<int32_t>, int64_t>> calls = {
      {prompts[0], 0}, {{21}, p0}, {{22}, p0 + 1}, {{23}, p0 + 2}};
  for (const auto& [tokens, start] : calls) {
    const Status st = (*decoder)->forward(tokens, start, false,
                                          MatrixView::dense(logits.data(), DType::kF32, 1, vocab));
    EXPECT_TRUE(st.ok()) << st.to_string();
    Result<int32_t> id = (*decoder)->forward_greedy(tokens, start);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    if (!id.ok()) return 1.0;
    EXPECT_EQ(*id, greedy_token({logits.data(), static_cast<std::size_t>(vocab)}))
        << "forward_greedy of " << tokens.size() << " tokens at " << start;
  }
  double worst = 0.0;
  for (int64_t s = 0; s < B; ++s) {
    std::vector<int32_t> tokens = prompts[static_cast<std::size_t>(s)];
    for (const auto& step : steps) tokens.push_back(step[static_cast<std::size_t>(s)]);
    const std::vector<float> alone = decoder_logits(dir, tokens, options, device_spec);
    const std::size_t first =
        prompts[static_cast<std::size_t>(s)].size() * static_cast<std::size_t>(vocab);
    EXPECT_EQ(alone.size(), first + steps.size() * static_cast<std::size_t>(vocab));
    if (alone.size() != first + steps.size() * static_cast<std::size_t>(vocab)) return 1.0;
    const Matrix want(alone.begin() + static_cast<std::ptrdiff_t>(first), alone.end());
    worst = std::max(worst, relative_error(got[static_cast<std::size_t>(s)], want));
  }
  return worst;
}

class EveryFormat : public ::testing::TestWithParam<FixtureFormat> {};

bool quantizes_activations(const Reference& ref) {
  return std::any_of(ref.model.layers.begin(), ref.model.layers.end(), [](const FixtureLayer& l) {
    return l.spec.fp8 && l.spec.activation != ActQuant::kNone;
  });
}

// How close the selected kernels come to the scalar reference kernels. Where activations stay f32
// only the summation order differs (1e-5). AVX-512 BF16 CPUs run f32 activations as bf16 hi + lo
// (16 significand bits; the bf16 lm_head: 1.4e-5 on the Xeon dev VM, 2026-12-02), and the int
// tiles fold a constant 2176 per 8-bit code into the zero term, so a group as long as K (a
// per-channel scale) sums values ~2300x the result before the correction: 1.3e-4 there for
// ct_w8a16_asym_channel, still 30x under the format's own bound against the float forward below.
// The 8-bit groups of gptq_8bit show it too where M picks another kernel than M = 1: batched
// decode (M = 3) against each sequence alone 7.7e-5 on the Xeon dev VM (2026-12-02).
double kernel_bound(FixtureFormat format) {
  if (!detect_cpu_features().avx512_bf16) return 1e-5;
  const bool eight_bit =
      format == FixtureFormat::kCtW8A16AsymChannel || format == FixtureFormat::kGptq8Bit;
  return eight_bit ? 3e-4 : 5e-5;
}

// Two references: the same decoder with every linear layer on the scalar reference kernels
// (kernel_bound above), and the double-precision forward above with the
// checkpoint's own activation quantization. Weight-only formats must match the latter to 2e-4.
// W8A8 FP8 gets 0.1 there: rounding activations to e4m3 is discontinuous, so the 1e-7 gap between
// f32 and double flips the odd code at a rounding boundary by a whole e4m3 step (6%), which this
// tiny random model amplifies (a 1e-6 nudge of the reference's inputs makes them agree to 2e-4).
TEST_P(EveryFormat, LogitsMatchTheReferenceKernelsAndTheDoublePrecisionForward) {
  const FixtureFormat format = GetParam();
  const std::string dir = dir_for(std::string(fixture_format_name(format)));
  const Reference ref = load_reference(format, dir);
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = 16;
  const std::vector<float> got = decoder_logits(dir, kTokens, options);
  ASSERT_EQ(got.size(), kTokens.size() * 256);

  DecoderOptions on_reference = options;
  on_reference.policy.backend = LinearBackend::kReference;
  const std::vector<float> scalar = decoder_logits(dir, kTokens, on_reference);
  ASSERT_EQ(scalar.size(), got.size());
  EXPECT_LE(relative_error(got, Matrix(scalar.begin(), scalar.end())), kernel_bound(format))
      << fixture_format_name(format) << " against the reference kernels";

  const Matrix want = reference_logits(ref, kTokens, /*w8a8=*/true);
  const double bound = quantizes_activations(ref) ? 0.1 : 2e-4;
  EXPECT_LE(relative_error(got, want), bound) << fixture_format_name(format);

  // Batched decode (M = 3) against each sequence alone (a prefill of up to 10 rows): the same
  // kernels up to the M bucket, so the kernel bound; W8A8 activation scales are per token here.
  const double batched = batched_against_alone(dir, options, "cpu");
  EXPECT_LE(batched, kernel_bound(format)) << fixture_format_name(format) << " batched decode";
  std::cout << "[ batched  ] " << fixture_format_name(format) << ": " << batched << "\n";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFormat,
                         ::testing::Values(FixtureFormat::kAwq, FixtureFormat::kGptqV1Sym4,
                                           FixtureFormat::kGptqAsym4, FixtureFormat::kGptqActOrder,
                                           FixtureFormat::kGptq8Bit, FixtureFormat::kGptq2Bit,
                                           FixtureFormat::kGptqDynamic,
                                           FixtureFormat::kAutoRoundGptq,
                                           FixtureFormat::kAutoRoundAwq, FixtureFormat::kCtW4A16,
                                           FixtureFormat::kCtW8A16AsymChannel,
                                           FixtureFormat::kCtFp8, FixtureFormat::kCtFp8Dynamic,
                                           FixtureFormat::kCtFp8Block, FixtureFormat::kFp8Static,
                                           FixtureFormat::kFp8Block, FixtureFormat::kUnquantized,
                                           FixtureFormat::kSharded),
                         [](const ::testing::TestParamInfo<FixtureFormat>& param) {
                           return std::string(fixture_format_name(param.param));
                         });

// The same decoder on this machine's first OpenCL device (PoCL in CI; skipped without one):
// every format against the double-precision forward, with the FP8 mode of the OpenCL platform
// (W8A16 unless a backend is forced: the checkpoint's activation scheme is not applied, so the
// reference runs W8A16 too), and the AutoRound / AWQ seed formats under --tp 2 equal tp 1 there.
class EveryFormatOnOpenCl : public ::testing::TestWithParam<FixtureFormat> {};

TEST_P(EveryFormatOnOpenCl, LogitsMatchTheDoublePrecisionForward) {
  Result<Device> device = detect_device("opencl");
  if (!device.ok()) GTEST_SKIP() << "no OpenCL device: " << device.status().to_string();
  const FixtureFormat format = GetParam();
  const std::string dir = dir_for("opencl_" + std::string(fixture_format_name(format)));
  const Reference ref = load_reference(format, dir);
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = 16;
  const std::vector<float> got = decoder_logits(dir, kTokens, options, "opencl");
  ASSERT_EQ(got.size(), kTokens.size() * 256);
  const Matrix want = reference_logits(ref, kTokens, /*w8a8=*/false);
  EXPECT_LE(relative_error(got, want), 2e-4) << fixture_format_name(format);
  if (format == FixtureFormat::kAutoRoundGptq || format == FixtureFormat::kAutoRoundAwq ||
      format == FixtureFormat::kAwq || format == FixtureFormat::kCtW8A16AsymChannel) {
    options.tp = 2;
    const std::vector<float> split = decoder_logits(dir, kTokens, options, "opencl");
    ASSERT_EQ(split.size(), got.size());
    EXPECT_LE(relative_error(split, Matrix(got.begin(), got.end())), 1e-5)
        << fixture_format_name(format) << " tp=2";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFormatOnOpenCl,
                         ::testing::Values(FixtureFormat::kAwq, FixtureFormat::kGptqV1Sym4,
                                           FixtureFormat::kGptqAsym4, FixtureFormat::kGptqActOrder,
                                           FixtureFormat::kGptq8Bit, FixtureFormat::kGptq2Bit,
                                           FixtureFormat::kAutoRoundGptq,
                                           FixtureFormat::kAutoRoundAwq, FixtureFormat::kCtW4A16,
                                           FixtureFormat::kCtW8A16AsymChannel,
                                           FixtureFormat::kCtFp8, FixtureFormat::kCtFp8Block,
                                           FixtureFormat::kFp8Block, FixtureFormat::kUnquantized),
                         [](const ::testing::TestParamInfo<FixtureFormat>& param) {
                           return std::string(fixture_format_name(param.param));
                         });

// The same decoder on this machine's first CUDA GPU (skipped without one, as in CI): every format
// against the CPU decoder and the double-precision forward. The CUDA FP8 mode should run W8A8
// checkpoints W8A16 up to 16 rows (docs/cuda.md), which is every forward here, so those formats
// are held to the W8A16 reference (or to W8A8's bound, should the mode table say W8A8); the
// weight-only ones must also be near the CPU decoder's logits with an f32 and a bf16 KV cache,
// and with bf16 activations (the GPU's native kernels: bf16 rounding of the activations, f32 sums
// in another order). Decode one token at a time equals the chunked prefill, and the AutoRound /
// AWQ seed formats under --tp 2 equal tp 1.
class EveryFormatOnCuda : public ::testing::TestWithParam<FixtureFormat> {};

TEST_P(EveryFormatOnCuda, LogitsMatchTheCpuDecoderAndTheDoublePrecisionForward) {
  Result<Device> device = detect_device("cuda");
  if (!device.ok()) GTEST_SKIP() << "no CUDA GPU: " << device.status().to_string();
  const FixtureFormat format = GetParam();
  const std::string name(fixture_format_name(format));
  const std::string dir = dir_for("cuda_" + name);
  const Reference ref = load_reference(format, dir);
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = 16;
  const std::vector<float> got = decoder_logits(dir, kTokens, options, "cuda");
  ASSERT_EQ(got.size(), kTokens.size() * 256);
  const double w8a16_error = relative_error(got, reference_logits(ref, kTokens, /*w8a8=*/false));
  if (quantizes_activations(ref)) {
    // W8A16 as expected, or, should the mode table pick W8A8 for these rows, the bound of W8A8
    // against the double forward (EveryFormat above says why it is 0.1).
    const double w8a8_error = relative_error(got, reference_logits(ref, kTokens, /*w8a8=*/true));
    EXPECT_TRUE(w8a16_error <= 2e-4 || w8a8_error <= 0.1)
        << name << ": " << w8a16_error << " against W8A16, " << w8a8_error << " against W8A8";
  } else {
    EXPECT_LE(w8a16_error, 2e-4) << name;
    for (DType kv : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
      DecoderOptions o = options;
      o.kv_dtype = kv;
      const std::vector<float> cpu = decoder_logits(dir, kTokens, o, "cpu");
      const std::vector<float> gpu =
          kv == DType::kF32 ? got : decoder_logits(dir, kTokens, o, "cuda");
      ASSERT_EQ(cpu.size(), gpu.size());
      // f32 KV: each decoder is within 2e-4 of the double forward, so within 4e-4 of the other
      // (H200, 2026-12-01: at most 1.2e-4, ct_w8a16_asym_channel). bf16 KV: rounding keys and
      // values to bf16 is discontinuous, so the f32-level difference of the two decoders' k and v
      // flips the odd element by a whole bf16 step (2^-8) - the W8A8 effect of EveryFormat at a
      // finer step (H200: 1.2e-4 to 3.5e-4 over the weight-only formats; 1e-3 leaves room).
      // FP8 KV (model/kv_fp8.h): the same flips at e4m3's step (2^-4), and both decoders write
      // the same codes for the same k and v (cuda_ops_test); bound in docs/runner.md.
      const double error = relative_error(gpu, Matrix(cpu.begin(), cpu.end()));
      EXPECT_LE(error, kv == DType::kF32 ? 4e-4 : (kv == DType::kBF16 ? 1e-3 : 2e-2))
          << name << " against the CPU decoder, kv " << dtype_name(kv);
      std::cout << "[ cuda     ] " << name << " kv " << dtype_name(kv) << ": " << error
                << " relative to the CPU decoder's\n";
    }
    DecoderOptions bf16 = options;
    bf16.act_dtype = DType::kBF16;
    bf16.kv_dtype = DType::kBF16;
    const std::vector<float> cpu = decoder_logits(dir, kTokens, bf16, "cpu");
    const std::vector<float> gpu = decoder_logits(dir, kTokens, bf16, "cuda");
    ASSERT_EQ(cpu.size(), gpu.size());
    const double error = relative_error(gpu, Matrix(cpu.begin(), cpu.end()));
    // H200, 2026-12-01: 1.1e-3 to 3.9e-3.
    EXPECT_LE(error, 2e-2) << name << " bf16 activations against the CPU decoder";
    std::cout << "[ cuda     ] " << name << " bf16 activations: " << error
              << " relative to the CPU decoder's\n";
  }
  DecoderOptions one_row = options;
  one_row.max_rows = 1;
  const std::vector<float> stepped = decoder_logits(dir, kTokens, one_row, "cuda");
  ASSERT_EQ(stepped.size(), got.size());
  EXPECT_LE(relative_error(stepped, Matrix(got.begin(), got.end())), 1e-5)
      << name << " one token per forward";
  // Batched decode of three sequences (M = 3, recorded as a CUDA graph from its second step)
  // against each alone: each is within 2e-4 of the double forward above.
  const double batched = batched_against_alone(dir, options, "cuda");
  EXPECT_LE(batched, 4e-4) << name << " batched decode";
  std::cout << "[ cuda     ] " << name << " batched decode: " << batched
            << " relative to each sequence alone\n";
  if (format == FixtureFormat::kAutoRoundGptq || format == FixtureFormat::kAutoRoundAwq ||
      format == FixtureFormat::kAwq || format == FixtureFormat::kCtW8A16AsymChannel) {
    options.tp = 2;
    const std::vector<float> split = decoder_logits(dir, kTokens, options, "cuda");
    ASSERT_EQ(split.size(), got.size());
    EXPECT_LE(relative_error(split, Matrix(got.begin(), got.end())), 1e-5) << name << " tp=2";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFormatOnCuda,
                         ::testing::Values(FixtureFormat::kAwq, FixtureFormat::kGptqV1Sym4,
                                           FixtureFormat::kGptqAsym4, FixtureFormat::kGptqActOrder,
                                           FixtureFormat::kGptq8Bit, FixtureFormat::kGptq2Bit,
                                           FixtureFormat::kGptqDynamic,
                                           FixtureFormat::kAutoRoundGptq,
                                           FixtureFormat::kAutoRoundAwq, FixtureFormat::kCtW4A16,
                                           FixtureFormat::kCtW8A16AsymChannel,
                                           FixtureFormat::kCtFp8, FixtureFormat::kCtFp8Dynamic,
                                           FixtureFormat::kCtFp8Block, FixtureFormat::kFp8Static,
                                           FixtureFormat::kFp8Block, FixtureFormat::kUnquantized,
                                           FixtureFormat::kSharded),
                         [](const ::testing::TestParamInfo<FixtureFormat>& param) {
                           return std::string(fixture_format_name(param.param));
                         });

// Writes `format`'s fixture into `dir` for a fusion test and returns the options both of its
// decoders start from (bf16 activations, 16 rows per forward, 64 positions).
DecoderOptions fusion_case(FixtureFormat format, const std::string& dir) {
  auto written = write_fixture(format, dir);
  EXPECT_TRUE(written.ok()) << written.status().to_string();
  DecoderOptions options;
  options.ctx = 64;
  options.max_rows = 16;
  options.act_dtype = DType::kBF16;
  options.progress = false;
  return options;
}

// The norm inside the linear layers (docs/runner.md): with bf16 activations on the GPU, the int
// 4-bit gemv kernels (M <= 16 here: every forward) take over each residual add + RMSNorm whose two
// neighbours can (all but the last, whose lm_head is a dense layer in these fixtures; none with
// 8-bit codes, whose gemv has no fused form), and the
// logits stay within bf16 rounding of the unfused decoder's (the norm's input is rounded before
// its 1 / rms instead of after). Prefill chunks, one-token steps (recorded as a CUDA graph from
// the second) and batched decode. With --tp 2 nothing fuses.
TEST(DecoderOnCuda, NormFusionKeepsTheUnfusedLogits) {
  Result<Device> device = detect_device("cuda");
  if (!device.ok()) GTEST_SKIP() << "no CUDA GPU: " << device.status().to_string();
  if (std::getenv("QLINEAR_NORM_FUSION") != nullptr) {
    GTEST_SKIP() << "QLINEAR_NORM_FUSION is set: it overrides both decoders of the comparison";
  }
  for (FixtureFormat format : {FixtureFormat::kAwq, FixtureFormat::kGptq8Bit,
                               FixtureFormat::kGptqActOrder, FixtureFormat::kCtW4A16}) {
    const std::string name(fixture_format_name(format));
    SCOPED_TRACE(name);
    const std::string dir = dir_for("cuda_fusion_" + name);
    const DecoderOptions options = fusion_case(format, dir);
    auto probe = Decoder::load(dir, *device, options);
    ASSERT_TRUE(probe.ok()) << probe.status().to_string();
    const auto per_forward = static_cast<std::size_t>(2 * (*probe)->config().layers);
    probe->reset();
    std::vector<std::pair<int64_t, bool>> norms;
    DecoderOptions fused = options;
    fused.fuse_norms = true;
    fused.norm_fusion_max_rows = 16;  // every row count the 4-bit gemv serves
    fused.on_norm = [&](int64_t rows, bool f) { norms.emplace_back(rows, f); };
    DecoderOptions plain = options;
    plain.fuse_norms = false;
    for (int64_t rows : {int64_t{16}, int64_t{1}}) {
      fused.max_rows = plain.max_rows = rows;
      norms.clear();
      const std::vector<float> a = decoder_logits(dir, kTokens, fused, "cuda");
      const std::vector<float> b = decoder_logits(dir, kTokens, plain, "cuda");
      ASSERT_EQ(a.size(), b.size());
      ASSERT_FALSE(norms.empty());
      const double error = relative_error(a, Matrix(b.begin(), b.end()));
      // The bound of bf16 activations on the GPU against the CPU decoder (EveryFormatOnCuda):
      // the same kind of difference, bf16 roundings of different values (H200, 2026-12-05:
      // 4.0e-3 to 5.7e-3 here, 1.1e-3 to 3.9e-3 there).
      EXPECT_LE(error, 2e-2) << "max_rows " << rows;
      // Rows up to which the kernels fuse: 16 with 4-bit codes; 8-bit ones never fuse.
      const int64_t gemv_rows = format == FixtureFormat::kGptq8Bit ? 0 : 16;
      if (rows <= gemv_rows) {
        EXPECT_GT(error, 0.0) << "max_rows " << rows << ": the fused logits are the unfused bits";
      }
      std::cout << "[ cuda     ] " << name << " max_rows " << rows << ": fused norms " << error
                << " relative to unfused\n";
      // Per forward, two norms per layer; all fused but the one before the dense lm_head, in
      // forwards the gemv runs.
      ASSERT_EQ(norms.size() % per_forward, 0u);
      for (std::size_t i = 0; i < norms.size(); ++i) {
        const bool last = i % per_forward == per_forward - 1;
        EXPECT_EQ(norms[i].second, !last && norms[i].first <= gemv_rows)
            << "norm " << i << " of a forward of " << norms[i].first << " rows";
      }
    }
    fused.max_rows = options.max_rows;  // three sequences per decode step
    const double batched = batched_against_alone(dir, fused, "cuda");
    EXPECT_LE(batched, 4e-4) << name << " batched decode, fused norms, against each alone";
    DecoderOptions split = fused;
    split.tp = 2;
    norms.clear();
    (void)decoder_logits(dir, kTokens, split, "cuda");
    for (const auto& [rows, f] : norms) EXPECT_FALSE(f) << "tp 2 fused a norm";
  }
}

// Prompt chunks of >= 64 rows over a bf16 cache take the tensor-core attention
// (decoder_attention_mma.cu): a 150-token prompt in one chunk, and in chunks of 64 (the later ones
// over the earlier ones' keys; with =require the last chunk of 22 rows too), gives the logits of
// the f32 attention kernels (QLINEAR_CUDA_ATTENTION_MMA=0) within the bound the GPU decoder meets
// against the CPU decoder with f32 activations (EveryFormatOnCuda: f32-rounding differences,
// grown by the layers after them, ~1e-4; H100 2026-12-07: 4.5e-5 here). With =require every
// prompt chunk must take it
// (an error otherwise), so the comparison cannot pass on the old kernels.
TEST(DecoderOnCuda, TensorCoreAttentionKeepsTheLogits) {
  Result<Device> device = detect_device("cuda");
  if (!device.ok()) GTEST_SKIP() << "no CUDA GPU: " << device.status().to_string();
  const std::string dir = dir_for("cuda_attention_mma");
  auto written = write_fixture(FixtureFormat::kAwq, dir);
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 150; ++i) prompt.push_back((i * 37 + 11) % 256);
  DecoderOptions options;
  options.ctx = 160;
  options.kv_dtype = DType::kBF16;
  for (int64_t chunk : {int64_t{150}, int64_t{64}}) {
    options.max_rows = chunk;
    std::vector<float> mma, old;
    {
      const char* before = std::getenv("QLINEAR_CUDA_ATTENTION_MMA");
      const std::string saved = before != nullptr ? before : "";
      ::setenv("QLINEAR_CUDA_ATTENTION_MMA", "require", 1);
      mma = decoder_logits(dir, prompt, options, "cuda");
      ::setenv("QLINEAR_CUDA_ATTENTION_MMA", "0", 1);
      old = decoder_logits(dir, prompt, options, "cuda");
      if (before != nullptr) {
        ::setenv("QLINEAR_CUDA_ATTENTION_MMA", saved.c_str(), 1);
      } else {
        ::unsetenv("QLINEAR_CUDA_ATTENTION_MMA");
      }
    }
    ASSERT_EQ(mma.size(), prompt.size() * 256);
    ASSERT_EQ(old.size(), mma.size());
    const double error = relative_error(mma, Matrix(old.begin(), old.end()));
    std::cout << "[ cuda     ] chunks of " << chunk << ": tensor-core attention " << error
              << " relative to the f32 kernels\n";
    EXPECT_LE(error, 2e-4) << "chunks of " << chunk;
  }
}

// The SwiGLU inside gate_up on the GPU: every MLP of a forward the 4-bit gemv runs does it when the
// checkpoint's gate and up are one layer (never for 8-bit codes or separate layers), and the
// logits are the unfused decoder's up to the summation order of paired columns (bf16 activations:
// the same arithmetic per column). With the norm fusion too, three sequences decoded together
// match each alone.
TEST(DecoderOnCuda, SwiGluFusionKeepsTheUnfusedLogits) {
  Result<Device> device = detect_device("cuda");
  if (!device.ok()) GTEST_SKIP() << "no CUDA GPU: " << device.status().to_string();
  if (std::getenv("QLINEAR_SWIGLU_FUSION") != nullptr) {
    GTEST_SKIP() << "QLINEAR_SWIGLU_FUSION is set: it overrides both decoders of the comparison";
  }
  for (FixtureFormat format : {FixtureFormat::kAwq, FixtureFormat::kGptq8Bit,
                               FixtureFormat::kGptqActOrder, FixtureFormat::kCtW4A16}) {
    const std::string name(fixture_format_name(format));
    SCOPED_TRACE(name);
    const std::string dir = dir_for("cuda_swiglu_" + name);
    const DecoderOptions options = fusion_case(format, dir);
    auto probe = Decoder::load(dir, *device, options);
    ASSERT_TRUE(probe.ok()) << probe.status().to_string();
    bool one_gate_up = false;
    for (const DecoderLayerKernels& k : (*probe)->kernels()) {
      if (k.name.ends_with("mlp.gate_up_proj")) one_gate_up = true;
    }
    const bool fusable = one_gate_up && format != FixtureFormat::kGptq8Bit;
    probe->reset();
    std::vector<std::pair<int64_t, bool>> mlps;
    DecoderOptions fused = options;
    fused.fuse_swiglu = true;
    fused.on_swiglu = [&](int64_t rows, bool f) { mlps.emplace_back(rows, f); };
    DecoderOptions plain = options;
    plain.fuse_swiglu = false;
    for (int64_t rows : {int64_t{16}, int64_t{1}}) {
      fused.max_rows = plain.max_rows = rows;
      mlps.clear();
      const std::vector<float> a = decoder_logits(dir, kTokens, fused, "cuda");
      const std::vector<float> b = decoder_logits(dir, kTokens, plain, "cuda");
      ASSERT_EQ(a.size(), b.size());
      ASSERT_FALSE(mlps.empty());
      const double error = relative_error(a, Matrix(b.begin(), b.end()));
      EXPECT_LE(error, 1e-5) << "max_rows " << rows;
      std::cout << "[ cuda     ] " << name << " max_rows " << rows << ": SwiGLU in gate_up "
                << error << " relative to unfused (gate_up one layer: " << one_gate_up << ")\n";
      for (std::size_t i = 0; i < mlps.size(); ++i) {
        EXPECT_EQ(mlps[i].second, fusable)
            << "mlp " << i << " of a forward of " << mlps[i].first << " rows";
      }
    }
    fused.max_rows = options.max_rows;  // three sequences per decode step
    fused.fuse_norms = true;
    const double batched = batched_against_alone(dir, fused, "cuda");
    EXPECT_LE(batched, 4e-4) << name << " batched decode, both fusions, against each alone";
  }
}

// Tensor parallelism emulated in one process: ranks' columns and summed row-parallel partials
// give the tp 1 logits (up to f32 summation order). The second pass uses intermediate_size 384:
// under tp 2 each rank holds 192 rows of down_proj, so a 128-row group (and a 128x128 FP8 block)
// straddles the ranks and both take it whole with zero padding (shard/shard.h plan_shard).
// FP8 runs W8A16 here (the W8A8 kernels disabled): dynamic activation scales are taken over each
// rank's own slice of K, as vLLM does, so W8A8 under TP is close to tp 1 but not equal; W8A16
// shows that the padded FP8 blocks are exact.
TEST(Decoder, TensorParallelEmulationEqualsOneRank) {
  for (int intermediate : {512, 384}) {
    for (FixtureFormat format :
         {FixtureFormat::kGptqActOrder, FixtureFormat::kAwq, FixtureFormat::kCtW8A16AsymChannel,
          FixtureFormat::kCtW4A16, FixtureFormat::kFp8Block, FixtureFormat::kUnquantized}) {
      const std::string dir = dir_for("tp_" + std::to_string(intermediate) + "_" +
                                      std::string(fixture_format_name(format)));
      FixtureOptions fixture;
      fixture.intermediate_size = intermediate;
      fixture.num_kv_heads = 4;  // tp 4 splits the KV heads too
      ASSERT_TRUE(write_fixture(format, dir, fixture).ok());
      DecoderOptions options;
      options.ctx = 32;
      options.max_rows = 16;
      if (format == FixtureFormat::kFp8Block) {
        options.policy.disabled = {"cpu.fp8.blas.sgemm", "cpu.fp8.w8a8.avx512",
                                   "reference.fp8.scalar"};
      }
      // The unquantized model also with the FP8 KV cache: each rank stores its own kv heads'
      // codes and scales (one scale per kv head, so a split cannot change them).
      std::vector<DType> kv_dtypes = {DType::kF32};
      if (format == FixtureFormat::kUnquantized) kv_dtypes.push_back(DType::kF8E4M3);
      for (DType kv : kv_dtypes) {
        options.tp = 1;
        options.kv_dtype = kv;
        const std::vector<float> one = decoder_logits(dir, kTokens, options);
        for (int tp : {2, 4}) {
          if (intermediate % (tp * 32) != 0) continue;  // rows per rank stay a multiple of 32
          options.tp = tp;
          const std::vector<float> split = decoder_logits(dir, kTokens, options);
          ASSERT_EQ(split.size(), one.size());
          const Matrix want(one.begin(), one.end());
          // FP8 KV: the ranks' f32-level differences (row-parallel sums in another order) flip
          // the odd code by an e4m3 step (dev VM: 2e-5 to 2.7e-4; the f32 cache 1e-6), far
          // below what FP8 itself costs (HfGolden: ~4e-2), which a wrongly split scale would show.
          const double error = relative_error(split, want);
          EXPECT_LE(error, kv == DType::kF32 ? 1e-5 : 1e-3)
              << fixture_format_name(format) << " intermediate=" << intermediate << " tp=" << tp
              << " kv " << dtype_name(kv);
        }
      }
    }
  }
}

// What each forward promises the attention (model/ops.h AttentionShape::settled_history, on which
// the CUDA ops read keys before the kernel just before finishes): a prompt chunk never (its rows
// read keys the same forward writes), a one-token step and a batched decode step (one row per
// sequence) always, on every layer.
TEST(Decoder, OnlyDecodeForwardsDeclareASettledHistory) {
  const std::string dir = dir_for("settled");
  ASSERT_TRUE(write_fixture(FixtureFormat::kUnquantized, dir).ok());
  DecoderOptions options;
  options.ctx = 32;
  options.max_rows = 4;
  options.sequences = 2;
  options.progress = false;
  std::vector<std::pair<int64_t, bool>> calls;
  options.on_attention = [&](int64_t rows, bool settled) { calls.emplace_back(rows, settled); };
  Result<Device> device = detect_device("cpu");
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  auto decoder = Decoder::load(dir, *device, options);
  ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
  const int64_t layers = (*decoder)->config().layers;
  const int64_t vocab = (*decoder)->config().vocab;
  std::vector<float> logits(static_cast<std::size_t>(2 * vocab));
  const MatrixView one = MatrixView::dense(logits.data(), DType::kF32, 1, vocab);
  auto expect_calls = [&](int64_t rows, bool settled, const std::string& what) {
    EXPECT_EQ(calls.size(), static_cast<std::size_t>(layers)) << what;
    for (const auto& [r, s] : calls) {
      EXPECT_EQ(r, rows) << what;
      EXPECT_EQ(s, settled) << what;
    }
    calls.clear();
  };
  const std::vector<int32_t> prompt = {1, 5, 9, 2};
  ASSERT_TRUE((*decoder)->forward(prompt, 0, false, one).ok());
  expect_calls(4, false, "a prompt chunk of 4");
  ASSERT_TRUE((*decoder)->forward(std::vector<int32_t>{7, 3}, 4, false, one).ok());
  expect_calls(2, false, "a prompt chunk of 2 after the first");
  ASSERT_TRUE((*decoder)->forward(std::vector<int32_t>{11}, 6, false, one).ok());
  expect_calls(1, true, "a one-token step");
  ASSERT_TRUE((*decoder)->forward_sequence(1, prompt, 0, false, one).ok());
  expect_calls(4, false, "sequence 1's prompt");
  const std::vector<int32_t> tokens = {4, 8};
  const std::vector<int32_t> positions = {7, 4};
  ASSERT_TRUE(
      (*decoder)
          ->decode_batch(tokens, positions, MatrixView::dense(logits.data(), DType::kF32, 2, vocab))
          .ok());
  expect_calls(2, true, "a batched decode step");
}

// Asking for the norm fusion where no kernel can do it (the CPU's) is harmless: every forward
// reports its two norms per layer through on_norm, none fused, and the logits are the unfused
// decoder's bit for bit (an AWQ folder with bf16 activations, the fusion's own conditions).
TEST(Decoder, NormFusionAskedOnTheCpuFusesNothingAndChangesNothing) {
  const std::string dir = dir_for("fusion_cpu");
  ASSERT_TRUE(write_fixture(FixtureFormat::kAwq, dir).ok());
  DecoderOptions plain;
  plain.ctx = 32;
  plain.max_rows = 4;
  plain.act_dtype = DType::kBF16;
  plain.fuse_norms = false;
  DecoderOptions fused = plain;
  fused.fuse_norms = true;
  fused.norm_fusion_max_rows = 4;
  std::vector<std::pair<int64_t, bool>> norms;
  fused.on_norm = [&](int64_t rows, bool f) { norms.emplace_back(rows, f); };
  const std::vector<float> a = decoder_logits(dir, kTokens, fused);
  const std::vector<float> b = decoder_logits(dir, kTokens, plain);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // 11 tokens in chunks of 4: three forwards (4, 4, 3 rows), 2 norms per layer each.
  ASSERT_FALSE(norms.empty());
  EXPECT_EQ(norms.size() % 3, 0u);
  const std::size_t per_forward = norms.size() / 3;
  EXPECT_EQ(per_forward % 2, 0u);
  for (std::size_t i = 0; i < norms.size(); ++i) {
    EXPECT_FALSE(norms[i].second) << "norm " << i;
    EXPECT_EQ(norms[i].first, i < 2 * per_forward ? 4 : 3) << "norm " << i;
  }
}

// The same for the SwiGLU inside gate_up: the CPU kernels cannot end with it, so every MLP of
// every forward reports it unfused and the logits keep their bits.
TEST(Decoder, SwiGluFusionAskedOnTheCpuFusesNothingAndChangesNothing) {
  const std::string dir = dir_for("swiglu_cpu");
  ASSERT_TRUE(write_fixture(FixtureFormat::kGptqAsym4, dir).ok());
  DecoderOptions plain;
  plain.ctx = 32;
  plain.max_rows = 4;
  plain.act_dtype = DType::kBF16;
  plain.fuse_swiglu = false;
  DecoderOptions fused = plain;
  fused.fuse_swiglu = true;
  std::vector<std::pair<int64_t, bool>> mlps;
  fused.on_swiglu = [&](int64_t rows, bool f) { mlps.emplace_back(rows, f); };
  const std::vector<float> a = decoder_logits(dir, kTokens, fused);
  const std::vector<float> b = decoder_logits(dir, kTokens, plain);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // 11 tokens in chunks of 4: three forwards (4, 4, 3 rows), one MLP per layer each.
  ASSERT_FALSE(mlps.empty());
  ASSERT_EQ(mlps.size() % 3, 0u);
  const std::size_t per_forward = mlps.size() / 3;
  for (std::size_t i = 0; i < mlps.size(); ++i) {
    EXPECT_FALSE(mlps[i].second) << "mlp " << i;
    EXPECT_EQ(mlps[i].first, i < 2 * per_forward ? 4 : 3) << "mlp " << i;
  }
}

// One token at a time through the KV cache equals the whole sequence at once; chunks of 4 equal
// one chunk; 1 thread equals all.
TEST(Decoder, DecodeStepsChunksAndThreadsAgree) {
  const std::string dir = dir_for("steps");
  ASSERT_TRUE(write_fixture(FixtureFormat::kGptqAsym4, dir).ok());
  DecoderOptions options;
  options.ctx = 32;
  options.max_rows = 16;
  const std::vector<float> whole = decoder_logits(dir, kTokens, options);
  options.max_rows = 1;
  const std::vector<float> steps = decoder_logits(dir, kTokens, options);
  options.max_rows = 4;
  options.threads = 1;
  const std::vector<float> chunks = decoder_logits(dir, kTokens, options);
  const Matrix want(whole.begin(), whole.end());
  EXPECT_LE(relative_error(steps, want), 1e-5);
  EXPECT_LE(relative_error(chunks, want), 1e-5);
}

TEST(Decoder, GreedyGenerationIsDeterministicAndStopsAtEos) {
  const std::string dir = dir_for("greedy");
  ASSERT_TRUE(write_fixture(FixtureFormat::kAwq, dir).ok());
  Result<Device> cpu = detect_device("cpu");
  ASSERT_TRUE(cpu.ok());
  DecoderOptions options;
  options.ctx = 64;
  options.progress = false;
  std::vector<std::vector<int32_t>> runs;
  for (int threads : {1, 2}) {
    options.threads = threads;
    auto decoder = Decoder::load(dir, *cpu, options);
    ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
    GenerationOptions gen;
    gen.max_tokens = 12;
    auto result = generate(**decoder, kTokens, gen);
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->output_ids.size(), 12u);
    EXPECT_EQ(result->stop_reason, "max_tokens");
    runs.push_back(result->output_ids);
    // The first greedy token is the argmax of the reference's last row.
    const Reference ref = load_reference(FixtureFormat::kAwq, dir_for("greedy_ref"));
    const Matrix want = reference_logits(ref, kTokens, true);
    const auto last = want.begin() + static_cast<std::ptrdiff_t>((kTokens.size() - 1) * 256);
    EXPECT_EQ(result->output_ids[0], std::max_element(last, last + 256) - last);
    // Stopping on the first token as EOS.
    gen.eos_ids = {result->output_ids[0]};
    auto stopped = generate(**decoder, kTokens, gen);
    ASSERT_TRUE(stopped.ok());
    EXPECT_EQ(stopped->output_ids.size(), 1u);
    EXPECT_EQ(stopped->stop_reason, "eos");
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// Sampling where the logits are (Decoder::forward_sampled: the backend's sample op, the penalty's
// seen flags kept on the device) picks what sample_token picks on the host from the downloaded
// rows (generate with keep_logits samples that way). One-token forwards on both sides (max_rows
// 1), so both read the same logits bit for bit. Two prompts in turn on one decoder (the second
// must not see the first's tokens as seen), option sets with and without the penalty, greedy
// with a penalty; on the cpu always, on the first OpenCL device (whose backend has no sample
// op: every row comes down) and CUDA GPU when there are.
TEST(Decoder, SampledGenerationPicksWhatHostSamplingPicks) {
  const std::string dir = dir_for("sampled");
  ASSERT_TRUE(write_fixture(FixtureFormat::kAwq, dir).ok());
  std::vector<SamplingOptions> sets(5);
  sets[0].temperature = 0.7;
  sets[0].seed = 11;
  sets[1].temperature = 1.3;
  sets[1].top_k = 40;
  sets[1].top_p = 0.9;
  sets[1].repetition_penalty = 4.0;
  sets[1].seed = 12;
  sets[2].temperature = 1.0;
  sets[2].min_p = 0.05;
  sets[2].repetition_penalty = 0.5;  // < 1 favours repeats
  sets[2].seed = 13;
  sets[3].temperature = 0.0;  // greedy of the penalized logits
  sets[3].repetition_penalty = 3.0;
  sets[4].temperature = 2.5;
  sets[4].top_p = 0.5;
  sets[4].repetition_penalty = 1.8;
  sets[4].seed = 14;
  const std::vector<int32_t> other = {7, 7, 200, 31, 5, 5, 5};
  for (const std::string spec : {"cpu", "opencl", "cuda"}) {
    Result<Device> device = detect_device(spec);
    if (!device.ok()) continue;  // no such device here
    SCOPED_TRACE(spec);
    DecoderOptions options;
    options.ctx = 64;
    options.max_rows = 1;
    options.progress = false;
    if (spec == "cuda") options.act_dtype = DType::kBF16;
    auto decoder = Decoder::load(dir, *device, options);
    ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
    int distinct_runs = 0;
    for (std::size_t k = 0; k < sets.size(); ++k) {
      for (const std::vector<int32_t>& prompt : {kTokens, other}) {
        GenerationOptions gen;
        gen.max_tokens = 24;
        gen.sampling = sets[k];
        auto sampled = generate(**decoder, prompt, gen);
        ASSERT_TRUE(sampled.ok()) << sampled.status().to_string();
        gen.keep_logits = true;  // the rows come to the host; sample_token picks there
        auto host = generate(**decoder, prompt, gen);
        ASSERT_TRUE(host.ok()) << host.status().to_string();
        EXPECT_EQ(sampled->output_ids, host->output_ids) << "option set " << k;
        ASSERT_EQ(sampled->output_ids.size(), 24u);
        const std::set<int32_t> ids(sampled->output_ids.begin(), sampled->output_ids.end());
        distinct_runs += ids.size() > 3 ? 1 : 0;
      }
    }
    // The sampled runs are not all one repeated token (the comparison would then say little).
    EXPECT_GE(distinct_runs, 6);
  }
}

TEST(Decoder, BadInputsAreErrors) {
  const std::string dir = dir_for("bad");
  ASSERT_TRUE(write_fixture(FixtureFormat::kAwq, dir).ok());
  Result<Device> cpu = detect_device("cpu");
  DecoderOptions options;
  options.ctx = 8;
  options.max_rows = 4;
  options.progress = false;
  options.tp = 3;  // 4 heads do not split 3 ways
  auto bad_tp = Decoder::load(dir, *cpu, options);
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_NE(bad_tp.status().message().find("num_attention_heads"), std::string::npos);
  options.tp = 1;
  auto decoder = Decoder::load(dir, *cpu, options);
  ASSERT_TRUE(decoder.ok()) << decoder.status().to_string();
  std::vector<float> logits(256);
  const MatrixView out = MatrixView::dense(logits.data(), DType::kF32, 1, 256);
  const std::vector<int32_t> too_many = {1, 2, 3, 4, 5};
  EXPECT_FALSE((*decoder)->forward(too_many, 0, false, out).ok());
  const std::vector<int32_t> outside = {1, 999};
  EXPECT_FALSE((*decoder)->forward(outside, 0, false, out).ok());
  const std::vector<int32_t> late = {1, 2};
  EXPECT_FALSE((*decoder)->forward(late, 7, false, out).ok());  // positions 7, 8 of ctx 8
}

}  // namespace
}  // namespace qlinear
