// The int4 decode inner loop of cpu.int.i16.avx2 (one row, 4 vectors of 8 columns per pass) over
// 256 MB of 64-column tiles from DRAM, in the row-major tile (a pass reads 128 of every 256-byte
// step) and in the split tile (two contiguous [steps, 32] passes), with and without software
// prefetch, beside a plain read of the same bytes. OpenMP threads take whole tiles.
//   g++ -O3 -mavx2 -fopenmp tile_stream_probe.cc -o tile_stream_probe
//   OMP_NUM_THREADS=2 ./tile_stream_probe
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kSteps = 256;      // K = 2048 rows of 4-bit codes
constexpr size_t kTiles = 4096;  // 4096 tiles of 64 KB

// One tile; kStride 64: row-major, 32: split passes. kAhead: steps prefetched ahead (0: none).
template <int kStride, int kAhead>
int32_t tile(const uint32_t* q, const uint32_t* x) {
  const __m256i mask = _mm256_set1_epi16(0xF);
  __m256i total = _mm256_setzero_si256();
  for (int c0 = 0; c0 < 64; c0 += 32) {
    const uint32_t* pass = kStride == 32 ? q + c0 * kSteps : q + c0;
    __m256i acc[4] = {};
    for (int d = 0; d < kSteps; ++d) {
      const uint32_t* w = pass + d * kStride;
      if (kAhead > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(w + kAhead * kStride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(w + kAhead * kStride + 16), _MM_HINT_T0);
      }
      __m256i xb[4];
      for (int f = 0; f < 4; ++f) xb[f] = _mm256_set1_epi32(static_cast<int>(x[d * 4 + f]));
      for (int j = 0; j < 4; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8 * j));
        __m256i s = _mm256_madd_epi16(_mm256_and_si256(v, mask), xb[0]);
        s = _mm256_add_epi32(
            s, _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), xb[1]));
        s = _mm256_add_epi32(
            s, _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 8), mask), xb[2]));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_srli_epi16(v, 12), xb[3]));
        acc[j] = _mm256_add_epi32(acc[j], s);
      }
    }
    for (int j = 0; j < 4; ++j) total = _mm256_add_epi32(total, acc[j]);
  }
  return _mm256_extract_epi32(total, 0);
}

template <class Fn>
void time_gbps(const char* name, const std::vector<uint32_t>& q, const std::vector<uint32_t>& x,
               Fn fn) {
  const auto t0 = std::chrono::steady_clock::now();
  int64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (size_t t = 0; t < kTiles; ++t) sum += fn(q.data() + t * kSteps * 64, x.data());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s %.1f GB/s (%d)  ", name, static_cast<double>(q.size()) * 4 / s / 1e9,
              static_cast<int>(sum & 1));
}

}  // namespace

int main() {
  std::vector<uint32_t> q(kTiles * kSteps * 64);
  std::vector<uint32_t> x(kSteps * 4);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint32_t>(i * 2654435761u);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint32_t>(i * 40503u) & 0x3F3F3F3Fu;
  for (int round = 0; round < 4; ++round) {
    time_gbps("rowmajor", q, x, tile<64, 0>);
    time_gbps("rowmajor+pf16", q, x, tile<64, 16>);
    time_gbps("split", q, x, tile<32, 0>);
    time_gbps("split+pf32", q, x, tile<32, 32>);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (size_t c = 0; c < 64; ++c) {
      __m256i a = _mm256_setzero_si256();
      for (size_t i = c * q.size() / 64; i < (c + 1) * q.size() / 64; i += 8) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&q[i])));
      }
      sum += _mm256_extract_epi32(a, 0) & 1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("read %.1f GB/s (%d)\n", static_cast<double>(q.size()) * 4 / s / 1e9,
                static_cast<int>(sum & 1));
  }
}
