// Multiply-accumulate rate of two register blocks in L1, one thread: the f32 panel engine's
// 6 rows x 16 columns of FMA, and an int16 block of 4 rows x 24 columns of vpmaddwd + vpaddd
// (the instructions an int16-activation prefill kernel would use on AVX2).
//   g++ -O3 multiply_rate_probe.cc -o multiply_rate_probe && ./multiply_rate_probe
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#define QL_AVX2 __attribute__((target("avx2,fma"))) __attribute__((noinline))

QL_AVX2 float f32_block(const float* a, const float* b, int k_steps, int reps) {
  __m256 acc[6][2];
  for (auto& r : acc) r[0] = r[1] = _mm256_setzero_ps();
  for (int t = 0; t < reps; ++t) {
    for (int k = 0; k < k_steps; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * 16);
      const __m256 b1 = _mm256_loadu_ps(b + k * 16 + 8);
#pragma GCC unroll 6
      for (int r = 0; r < 6; ++r) {
        const __m256 x = _mm256_broadcast_ss(a + r * k_steps + k);
        acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
      }
    }
  }
  float sum = 0;
  for (auto& r : acc) {
    float o[8];
    _mm256_storeu_ps(o, _mm256_add_ps(r[0], r[1]));
    sum += o[0];
  }
  return sum;
}

QL_AVX2 int i16_block(const int32_t* a, const int32_t* b, int pair_steps, int reps) {
  __m256i acc[4][3];
  for (auto& r : acc) r[0] = r[1] = r[2] = _mm256_setzero_si256();
  for (int t = 0; t < reps; ++t) {
    for (int k = 0; k < pair_steps; ++k) {
      const auto* bk = reinterpret_cast<const __m256i*>(b + k * 24);
      const __m256i b0 = _mm256_loadu_si256(bk);
      const __m256i b1 = _mm256_loadu_si256(bk + 1);
      const __m256i b2 = _mm256_loadu_si256(bk + 2);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const __m256i x = _mm256_set1_epi32(a[r * pair_steps + k]);
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
        acc[r][2] = _mm256_add_epi32(acc[r][2], _mm256_madd_epi16(x, b2));
      }
    }
  }
  int sum = 0;
  for (auto& r : acc) {
    sum += _mm256_extract_epi32(_mm256_add_epi32(r[0], _mm256_add_epi32(r[1], r[2])), 0);
  }
  return sum;
}

int main() {
  constexpr int kK = 256;
  constexpr int kReps = 200000;
  const std::vector<float> a(6 * kK, 1.0f), b(kK * 16, 0.5f);
  const std::vector<int32_t> ai(4 * kK, 0x00010001), bi(kK * 24, 0x00020002);
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    volatile float f = f32_block(a.data(), b.data(), kK, kReps);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("f32 6x16: %.1f GMAC/s  ", 6.0 * 16 * kK * kReps / s / 1e9);
    t0 = std::chrono::steady_clock::now();
    volatile int i = i16_block(ai.data(), bi.data(), kK / 2, kReps);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("i16 4x24: %.1f GMAC/s\n", 4.0 * 24 * kK * kReps / s / 1e9);
    (void)f;
    (void)i;
  }
}
