// The loops of the AVX-512 BF16 FP8 engine (fp8_dpbf16.cc), included once per decoder under
// that decoder's `#pragma GCC target`, so each copy may use exactly its own instruction set.
// Before including, fp8_dpbf16.cc defines in the enclosing namespace a `Decoder` with
//   void step(const uint8_t* codes, __m512bh* pair0, __m512bh* pair1) const;
// that turns the 64 panel bytes of two k pairs into their two bf16 operands (value * 2^-8).
// No include guard on purpose.
//
// Work unit: a group of kPanelGroup panels (64 output rows), so each broadcast activation pair
// feeds 4 vdpbf16ps (one per panel) -- a 1:1 ratio would leave the load/broadcast port, not the
// dot-product unit, as the limit.

constexpr int kFusedRows = 4;  // M <= 4: decode in registers, no buffer
constexpr int kMaxRows = 6;    // rows per block from the decoded buffer: 6 x 4 accumulators

struct BlockArgs {
  const uint8_t* codes[kPanelGroup];  // fused: this chunk's codes of each panel
  const uint16_t* buffer;             // otherwise: the chunk decoded, [pairs][kPanelGroup][32]
  int64_t pairs;
  const uint16_t* hi;  // activation rows (+ i * stride), at the chunk's first column
  const uint16_t* lo;  // optional second term
  int64_t stride;
  const float* scales[kPanelGroup];  // each panel's 16 weight scales of this chunk
  const float* row_scales;           // optional activation scale per row (+ i * row_scale_stride)
  int64_t row_scale_stride;
  float* yt;  // [rows][kPanelGroup * kPanelN] accumulated output
};

inline __m512bh pair_of(const uint16_t* x) {
  int32_t bits;
  std::memcpy(&bits, x, sizeof(bits));
  return (__m512bh)_mm512_set1_epi32(bits);
}

// yt[i] += scale * (x[i] . w) over one chunk for kRows activation rows and the 4 panels.
template <int kRows, bool kLo, bool kFused>
void block_dot(const BlockArgs& a) {
  constexpr int kGroup = kPanelGroup;
  // vdpbf16ps has a latency of several cycles: a single row splits its sums over 2 chains.
  constexpr int kChains = kRows == 1 ? 2 : 1;
  __m512 acc[kRows][kGroup][kChains];
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int g = 0; g < kGroup; ++g) {
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) acc[i][g][c] = _mm512_setzero_ps();
    }
  }
  if constexpr (kFused) {
    const Decoder decoder;
    for (int64_t p = 0; p < a.pairs; p += 2) {
      __m512bh w[kGroup][2];
#pragma GCC unroll 4
      for (int g = 0; g < kGroup; ++g) decoder.step(a.codes[g] + p * 32, &w[g][0], &w[g][1]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 6
        for (int i = 0; i < kRows; ++i) {
          const __m512bh xh = pair_of(a.hi + i * a.stride + 2 * (p + h));
#pragma GCC unroll 4
          for (int g = 0; g < kGroup; ++g) {
            __m512& s = acc[i][g][h % kChains];
            s = _mm512_dpbf16_ps(s, w[g][h], xh);
          }
          if constexpr (kLo) {
            const __m512bh xl = pair_of(a.lo + i * a.stride + 2 * (p + h));
#pragma GCC unroll 4
            for (int g = 0; g < kGroup; ++g) {
              __m512& s = acc[i][g][(h + 1) % kChains];
              s = _mm512_dpbf16_ps(s, w[g][h], xl);
            }
          }
        }
      }
    }
  } else {
    for (int64_t p = 0; p < a.pairs; ++p) {
      __m512bh w[kGroup];
#pragma GCC unroll 4
      for (int g = 0; g < kGroup; ++g) {
        w[g] = (__m512bh)_mm512_load_si512(a.buffer + (p * kGroup + g) * 32);
      }
#pragma GCC unroll 6
      for (int i = 0; i < kRows; ++i) {
        const __m512bh xh = pair_of(a.hi + i * a.stride + 2 * p);
#pragma GCC unroll 4
        for (int g = 0; g < kGroup; ++g) {
          __m512& s = acc[i][g][p % kChains];
          s = _mm512_dpbf16_ps(s, w[g], xh);
        }
        if constexpr (kLo) {
          const __m512bh xl = pair_of(a.lo + i * a.stride + 2 * p);
#pragma GCC unroll 4
          for (int g = 0; g < kGroup; ++g) {
            __m512& s = acc[i][g][(p + 1) % kChains];
            s = _mm512_dpbf16_ps(s, w[g], xl);
          }
        }
      }
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < kRows; ++i) {
    const __m512 row = a.row_scales == nullptr
                           ? _mm512_set1_ps(1.0f)
                           : _mm512_set1_ps(a.row_scales[i * a.row_scale_stride]);
#pragma GCC unroll 4
    for (int g = 0; g < kGroup; ++g) {
      __m512 sum = acc[i][g][0];
      if constexpr (kChains == 2) sum = _mm512_add_ps(sum, acc[i][g][1]);
      const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(a.scales[g]), row);
      float* out = a.yt + i * kGroup * kPanelN + g * kPanelN;
      _mm512_storeu_ps(out, _mm512_fmadd_ps(sum, scale, _mm512_loadu_ps(out)));
    }
  }
}

using BlockFn = void (*)(const BlockArgs&);

template <bool kLo, bool kFused, int... kIs>
constexpr std::array<BlockFn, sizeof...(kIs)> block_table(std::integer_sequence<int, kIs...>) {
  return {&block_dot<kIs + 1, kLo, kFused>...};
}

// [lo][fused][rows - 1]
const std::array<BlockFn, kFusedRows> kFusedFns[2] = {
    block_table<false, true>(std::make_integer_sequence<int, kFusedRows>()),
    block_table<true, true>(std::make_integer_sequence<int, kFusedRows>())};
const std::array<BlockFn, kMaxRows> kBufferedFns[2] = {
    block_table<false, false>(std::make_integer_sequence<int, kMaxRows>()),
    block_table<true, false>(std::make_integer_sequence<int, kMaxRows>())};

// One chunk of the group's panels into bf16 pairs, [pairs][kPanelGroup][32].
inline void decode_chunk(const uint8_t* const* codes, int64_t pairs, uint16_t* out) {
  const Decoder decoder;
  for (int g = 0; g < kPanelGroup; ++g) {
    for (int64_t p = 0; p < pairs; p += 2) {
      __m512bh w[2];
      decoder.step(codes[g] + p * 32, &w[0], &w[1]);
      _mm512_store_si512(out + (p * kPanelGroup + g) * 32, (__m512i)w[0]);
      _mm512_store_si512(out + ((p + 1) * kPanelGroup + g) * 32, (__m512i)w[1]);
    }
  }
}

// One group of kPanelGroup panels: every K chunk, every block of activation rows, then the
// output rows. For M <= 4 the chunk is decoded in registers, else once into `buffer`.
inline void run_group(const Fp8Panels& w, const Bf16Activations& x, int64_t group, uint16_t* buffer,
                      float* yt, MatrixView y) {
  const int64_t M = x.M;
  const int64_t chunks = w.chunks();
  const bool fused = M <= kFusedRows;
  const int64_t row_block = fused ? kFusedRows : kMaxRows;
  const bool has_lo = x.lo != nullptr;
  std::fill(yt, yt + M * kPanelGroup * kPanelN, 0.0f);
  BlockArgs a{};
  a.buffer = buffer;
  a.pairs = w.chunk_k / 2;
  a.stride = x.stride;
  a.row_scale_stride = chunks;
  for (int64_t c = 0; c < chunks; ++c) {
    for (int g = 0; g < kPanelGroup; ++g) {
      const int64_t panel = group * kPanelGroup + g;
      a.codes[g] = w.chunk_codes(panel, c);
      a.scales[g] = w.panel_scales(panel, c);
    }
    if (!fused) decode_chunk(a.codes, a.pairs, buffer);
    for (int64_t m0 = 0; m0 < M; m0 += row_block) {
      const int64_t rows = M - m0 < row_block ? M - m0 : row_block;
      const int64_t off = m0 * x.stride + c * w.chunk_k;
      a.hi = x.hi + off;
      a.lo = has_lo ? x.lo + off : nullptr;
      a.row_scales = x.chunk_scales == nullptr ? nullptr : x.chunk_scales + m0 * chunks + c;
      a.yt = yt + m0 * kPanelGroup * kPanelN;
      if (fused) {
        kFusedFns[has_lo][rows - 1](a);
      } else {
        kBufferedFns[has_lo][rows - 1](a);
      }
    }
  }
  store_panel_rows(w, yt, kPanelGroup * kPanelN, group * kPanelGroup, kPanelGroup, y);
}

void run_groups(const Fp8Panels& w, const Bf16Activations& x, MatrixView y, int threads,
                float* yt_slots) {
#pragma omp parallel num_threads(threads)
  {
    alignas(64) uint16_t buffer[kMaxChunkK / 2 * kPanelGroup * 32];
    float* yt = yt_slots + static_cast<int64_t>(omp_get_thread_num()) * x.M * kPanelGroup * kPanelN;
    // Dynamic: a thread the OS takes away (a shared machine) does not hold up the others; each
    // group still streams 64 * K contiguous bytes.
#pragma omp for schedule(dynamic, 1)
    for (int64_t group = 0; group < w.panels() / kPanelGroup; ++group) {
      run_group(w, x, group, buffer, yt, y);
    }
  }
}
