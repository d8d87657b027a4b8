#include "kernels/cpu/fp8_cpu_common.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "kernels/common/activation_quant.h"
#include "kernels/common/kernel_io.h"
#include "kernels/common/requirements.h"
#include "kernels/cpu/output_store.h"
#include "qlinear/dtype.h"

namespace qlinear::fp8_cpu {

namespace {

std::string_view mode_name(Fp8Mode mode) {
  switch (mode) {
    case Fp8Mode::kW8A8:
      return "w8a8";
    case Fp8Mode::kW8A16:
      return "w8a16";
    case Fp8Mode::kNone:
      return "none";
  }
  return "?";
}

std::string missing_isa(const CpuFeatures& cpu, const IsaNeeds& needs) {
  std::string missing;
  auto need = [&](bool wanted, bool present, std::string_view name) {
    if (wanted && !present) missing += fmt::format("{}{}", missing.empty() ? "" : " ", name);
  };
  need(needs.avx2, cpu.avx2, "avx2");
  need(needs.fma, cpu.fma, "fma");
  need(needs.f16c, cpu.f16c, "f16c");
  need(needs.avx512f, cpu.avx512f, "avx512f");
  need(needs.avx512bw, cpu.avx512bw, "avx512bw");
  need(needs.avx512_bf16, cpu.avx512_bf16, "avx512_bf16");
  return missing;
}

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

Verdict check_fp8(const LinearProblem& problem, const Device& device, Fp8Mode mode,
                  const IsaNeeds& needs) {
  QL_REQUIRE(require_platform(device, Platform::kCpu));
#if !defined(__x86_64__)
  return Verdict::reject(Reason::kNotCompiled, "x86-64 kernel; this binary is not for x86-64");
#endif
  QL_REQUIRE(require_scheme(problem, WeightScheme::kFp8));
  if (problem.fp8_mode != mode) {
    return Verdict::reject(Reason::kFp8Mode,
                           fmt::format("FP8 mode is {}; this kernel runs {}",
                                       mode_name(problem.fp8_mode), mode_name(mode)));
  }
  if (problem.fp8_weight == Fp8WeightGranularity::kBlock &&
      (problem.block_n <= 0 || problem.block_k <= 0 || problem.block_k % 32 != 0)) {
    return Verdict::reject(Reason::kFp8Granularity,
                           fmt::format("block [{}, {}]; needs block_n > 0 and block_k a positive "
                                       "multiple of 32",
                                       problem.block_n, problem.block_k));
  }
  if (mode == Fp8Mode::kW8A8) {
    const ActQuant act = w8a8_act_quant(problem);
    switch (act) {
      case ActQuant::kDynamicToken:
      case ActQuant::kDynamicTensor:
      case ActQuant::kStaticTensor:
        break;
      case ActQuant::kDynamicGroup: {
        const int64_t group_k = w8a8_act_group_k(problem);
        if (group_k % 32 != 0) {
          return Verdict::reject(
              Reason::kActivationQuant,
              fmt::format("activation group {} columns; needs a multiple of 32", group_k));
        }
        break;
      }
      case ActQuant::kNone:
        return Verdict::reject(Reason::kActivationQuant,
                               "W8A8 without an activation quantization kind");
    }
  }
  QL_REQUIRE(require_io_dtypes(problem));
  if (std::string missing = missing_isa(device.cpu, needs); !missing.empty()) {
    return Verdict::reject(Reason::kMissingIsa, fmt::format("needs {}", missing));
  }
  return Verdict::accept();
}

int64_t chunk_k_for(const LinearProblem& problem, Fp8Mode mode) {
  int64_t chunk = kMaxChunkK;
  if (problem.fp8_weight == Fp8WeightGranularity::kBlock)
    chunk = std::gcd(chunk, int64_t{problem.block_k});
  if (mode == Fp8Mode::kW8A8 && w8a8_act_quant(problem) == ActQuant::kDynamicGroup) {
    chunk = std::gcd(chunk, w8a8_act_group_k(problem));
  }
  return chunk;
}

Result<Fp8Panels> make_panels(const Fp8Weights& w, int64_t chunk_k, PanelLayout layout,
                              int threads) {
  if (chunk_k <= 0 || chunk_k % 32 != 0 || (w.is_block() && w.block_k % chunk_k != 0)) {
    return make_error(ErrorCode::kInternal,
                      "fp8 panels: chunk_k={} must be a positive multiple of 32 dividing "
                      "block_k={}",
                      chunk_k, w.block_k);
  }
  Fp8Panels p;
  p.N = w.N;
  p.K = w.K;
  p.Np = round_up(w.N, kPanelN * kPanelGroup);
  p.Kp = round_up(w.K, chunk_k);
  p.chunk_k = chunk_k;
  p.layout = layout;
  p.seg_k = w.is_block() ? w.block_k : p.Kp;
  p.segs = w.is_block() ? (w.K + w.block_k - 1) / w.block_k : 1;
  p.codes.assign(static_cast<std::size_t>(p.Np * p.Kp), 0);
  p.scales.assign(static_cast<std::size_t>(p.Np * p.segs), 0.0f);
  p.bias.assign(static_cast<std::size_t>(p.Np), 0.0f);
  for (std::size_t n = 0; n < w.bias.size(); ++n) p.bias[n] = w.bias[n];
  const int64_t panels = p.panels();
  const int64_t K = w.K;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t panel = 0; panel < panels; ++panel) {
    for (int r = 0; r < kPanelN; ++r) {
      const int64_t n = panel * kPanelN + r;
      if (n >= w.N) break;
      for (int64_t k0 = 0; k0 < K; k0 += chunk_k) {
        uint8_t* dst = p.codes.data() + panel * kPanelN * p.Kp + k0 * kPanelN;  // chunk_codes()
        const uint8_t* src = w.qweight.data() + n * K + k0;
        const int64_t count = std::min(chunk_k, K - k0);
        // k: the column inside the chunk (chunks hold whole pairs and pairs of pairs).
        for (int64_t k = 0; k < count; ++k) {
          if (layout == PanelLayout::kPairs) {
            dst[(k / 2) * 2 * kPanelN + r * 2 + (k % 2)] = src[k];
          } else if (layout == PanelLayout::kPairsVbmi) {
            const int64_t pair = k / 2;
            const int64_t j = r * 2 + (k % 2);  // the bf16 lane of this code in its pair
            dst[(pair / 2) * 4 * kPanelN + 16 * (j / 8) + 8 * (pair % 2) + j % 8] = src[k];
          } else {
            dst[k * kPanelN + r] = src[k];
          }
        }
      }
      for (int64_t j = 0; j < p.segs; ++j) {
        p.scales[(panel * p.segs + j) * kPanelN + r] =
            w.weight_scale(n, j * (w.is_block() ? w.block_k : 0)) * kDecodeFactor;
      }
    }
  }
  return p;
}

int prepare_threads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

void activations_to_bf16(ConstMatrixView x, int64_t Kp, uint16_t* hi, uint16_t* lo, int threads,
                         float* row_slots) {
  const int64_t M = x.rows();
  threads = static_cast<int>(std::clamp<int64_t>(M, 1, threads));  // no idle threads for M = 1
  const int64_t K = x.cols();
#pragma omp parallel num_threads(threads)
  {
    float* row = row_slots + static_cast<int64_t>(omp_get_thread_num()) * K;
#pragma omp for schedule(static)
    for (int64_t m = 0; m < M; ++m) {
      convert_to_f32(x.row(m), x.dtype(), static_cast<std::size_t>(K), row);
      uint16_t* h = hi + m * Kp;
      for (int64_t k = 0; k < K; ++k) h[k] = f32_to_bf16(row[k]);
      for (int64_t k = K; k < Kp; ++k) h[k] = 0;
      if (lo == nullptr) continue;
      uint16_t* l = lo + m * Kp;
      for (int64_t k = 0; k < K; ++k) l[k] = f32_to_bf16(row[k] - bf16_to_f32(h[k]));
      for (int64_t k = K; k < Kp; ++k) l[k] = 0;
    }
  }
}

void activations_to_f32(ConstMatrixView x, int64_t Kp, float* out, int threads) {
  const int64_t M = x.rows();
  threads = static_cast<int>(std::clamp<int64_t>(M, 1, threads));  // no idle threads for M = 1
  const int64_t K = x.cols();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    convert_to_f32(x.row(m), x.dtype(), static_cast<std::size_t>(K), out + m * Kp);
    for (int64_t k = K; k < Kp; ++k) out[m * Kp + k] = 0.0f;
  }
}

void store_panel_rows(const Fp8Panels& w, const float* yt, int64_t yt_ld, int64_t first_panel,
                      int64_t panels, MatrixView y) {
  const int64_t n0 = first_panel * kPanelN;
  if (n0 >= w.N) return;
  const int64_t width = std::min(panels * kPanelN, w.N - n0);
  const int64_t elem = static_cast<int64_t>(y.element_bytes());
  for (int64_t m = 0; m < y.rows(); ++m) {
    store_output(yt + m * yt_ld, w.bias.data() + n0, width, y.dtype(),
                 static_cast<std::byte*>(y.row(m)) + n0 * elem);
  }
}

}  // namespace qlinear::fp8_cpu
