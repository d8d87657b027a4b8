// The boundary between the CUDA backend's device code (the .cu files, compiled by nvcc) and its
// host code (host/*.cc, compiled by the C++ compiler): plain launch functions over plain types.
// nvcc's C++20 front end cannot compile fmt's consteval format strings (core/status.h), so the
// .cu files see only this header and the CUDA headers; everything that builds Status messages,
// uploads canonical weights or talks to cuBLASLt lives in host/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace qlinear::cuda_launch {

// Element types of activations and outputs (f32 / bf16 / f16), and kF8: an FP8 KV cache's e4m3
// codes (DecoderCache's scales give their values).
enum : int { kF32 = 0, kBF16 = 1, kF16 = 2, kF8 = 3 };

// --- common.cu ---

// y[m, n] = src[m * N + n] (+ bias[n]) in y's dtype, for an [M, N] f32 src (bias may be null).
cudaError_t epilogue(const float* src, int64_t M, int64_t N, const float* bias, void* y,
                     int64_t ldy, int out_code, cudaStream_t stream);
// y[m, n] += bias[n] for an [M, N] f32 y with row stride ldy.
cudaError_t bias_add_f32(float* y, int64_t M, int64_t N, int64_t ldy, const float* bias,
                         cudaStream_t stream);
// out[i] = in[i] converted (f32 / bf16 / f16 codes), `count` elements.
cudaError_t convert(const void* in, int in_code, int64_t count, void* out, int out_code,
                    cudaStream_t stream);
// W [N, K] = (code - zero) * scale of GPTQ-packed int weights (canonical form), in out_code.
cudaError_t dequant_int(const uint32_t* qweight, const float* scales, const uint8_t* zeros,
                        const int32_t* g_idx, int bits, int64_t K, int64_t N, int group_size,
                        void* out, int out_code, cudaStream_t stream);
// W [N, K] = e4m3 code * scale (per row when block_k == 0, else [ceil(N/bn), ceil(K/bk)]).
cudaError_t dequant_fp8(const uint8_t* q, const float* scale, int64_t K, int64_t N, int block_n,
                        int block_k, void* out, int out_code, cudaStream_t stream);

// --- wo_mma.cu: the weight-only mma kernel ---

enum WoCode : int { kU4 = 4, kU8 = 8, kE4M3 = 9 };
inline constexpr int kWoBlockN = 128;  // columns per block (the prepared N is padded to it)
inline constexpr int kWoChunk = 128;   // K rows per pipeline stage (the prepared K is padded)
inline constexpr int kWoThreads = 128;
inline constexpr int kWoMaxSplit = 8;
// The largest split QLINEAR_CUDA_WO_SPLIT may force: 16 is a non-portable cluster size (sm90),
// launched with cudaFuncAttributeNonPortableClusterSizeAllowed (a measurement knob, not chosen
// by the heuristic yet).
inline constexpr int kWoMaxForcedSplit = 16;
// K rows per 16-byte lane vector of a 16-column tile.
inline constexpr int wo_step_rows(int code) { return code == kU4 ? 64 : 32; }

struct WoParams {
  const void* w;         // repacked codes
  const void* scales;    // [groups, Npad] f16 or f32
  const uint8_t* zeros;  // [groups, Npad] or null (symmetric)
  const float* bias;     // [N] or null
  const void* x;         // [M, >= K] f16 / bf16, 16-byte aligned rows (ldx % 8 == 0)
  int64_t ldx;
  void* y;
  int64_t ldy;
  int M;
  int N;
  int Npad;
  int K;           // valid columns of x
  int steps;       // Kpad / wo_step_rows(code)
  int chunks;      // Kpad / kWoChunk
  int group_rows;  // rows per scale group (a multiple of 32)
  int groups;
  int out_code;
  int split;     // blocks per tile splitting K (a cluster when > 1: sm90 only)
  int sym_zero;  // 2^(bits-1)
  int seg_kb;    // 32-row blocks sharing one scale row inside a 128-row chunk: 1, 2 or 4
  int kb_shift;  // log2(group_rows / 32) when a power of two, else -1 (division)
};

struct WoVariant {
  int code = kU4;
  bool bf16 = true;
  bool f16_scale = false;
  int mt = 1;         // m16 tiles per block: 1, 2 or 4
  int smem = 0;       // dynamic shared memory bytes
  int occupancy = 0;  // resident blocks per SM
};
// Sets the variant's shared-memory limit and measures its occupancy (prepare time).
cudaError_t wo_mma_setup(WoVariant& variant);
// grid = (tiles * split, row blocks); a cluster launch of `split` blocks when split > 1.
cudaError_t wo_mma_launch(const WoVariant& variant, const WoParams& params, unsigned tiles,
                          unsigned row_blocks, cudaStream_t stream);
// Codes into the kernel's fragment order (see wo_mma.cu): from GPTQ-packed qweight (int, with
// the optional act-order permutation of K) or [N, K] e4m3 bytes.
cudaError_t wo_repack(int code, const uint32_t* qweight, const uint8_t* fp8, const int32_t* perm,
                      int bits, int64_t K, int64_t N, int64_t tiles16, int64_t steps, uint32_t* out,
                      cudaStream_t stream);
// out [M, Kpad] = x[m, perm[k]] (or x[m, k]) for k < K, 0 beyond; 16-bit elements.
cudaError_t wo_stage_x(const void* x, int64_t ldx, const int32_t* perm, int64_t M, int64_t K,
                       int64_t Kpad, void* out, cudaStream_t stream);

// --- int_gemv.cu: the int decode kernel (cuda.int.gemv.sm80) ---

// Codes are wo_repack's layout (kU4 / kU8) with N padded to 16 and K to kGemvStepRows.
inline constexpr int kGemvStepRows = 64;
inline constexpr int kGemvMaxWarps = 8;  // warps per block (tpb * wk)

struct GemvParams {
  const void* w;         // wo_repack codes [tiles][steps (of 64 rows)][32 lanes] x 16 B (x2 8-bit)
  const void* scales;    // [tiles][groups][8] pairs (column g, g + 8): f16 or f32
  const uint8_t* zeros;  // [tiles][groups][8] u8 pairs, or null (symmetric)
  const float* bias;     // [N] or null
  const void* x;         // [M, >= K] f16 / bf16, 16-byte aligned rows
  int64_t ldx;
  void* y;
  int64_t ldy;
  int M;
  int N;
  int K;      // valid columns of x (multiple of 8)
  int steps;  // Kpad / kGemvStepRows
  int groups;
  int group_shift;  // log2(group rows) (>= 5), or -1 for one group (channelwise)
  int sym_zero;     // 2^(bits-1)
  int out_code;
  int tiles;  // Npad / 16
  int tpb;    // tiles per block
  int wk;     // warps per tile, splitting K (tpb * wk <= kGemvMaxWarps)
};

// The norm fusion of a run (qlinear/linear.h LinearFusion), a second kernel argument of the fused
// kernels only: grown into GemvParams, it changed the register allocation of 89 of the 136 plain
// kernels (ptxas, +6 to -6 registers), which it must leave alone.
struct GemvFusion {
  // Add-norm epilogue when `residual` is set: residual += y (y rounded to out_code), pre =
  // norm_weight * residual, partials_out[row, tile] = the f64 sum of the tile's 16 residual
  // squares; y is not written.
  float* residual = nullptr;  // f32 [M, >= N]
  int64_t ldr = 0;
  const float* norm_weight = nullptr;  // f32 [N]
  void* pre = nullptr;
  int64_t ldpre = 0;
  int pre_code = 0;
  double* partials_out = nullptr;  // [M, tiles]
  int64_t ldpo = 0;
  // RMS prologue when `partials_in` is set: y = inv_row * acc + bias, inv_row = 1 / sqrt(the sum
  // of the row's partial_count partials / norm_cols + eps).
  const double* partials_in = nullptr;
  int64_t ldpi = 0;
  int partial_count = 0;
  int norm_cols = 0;
  float eps = 0.0f;
  // Paired columns when half_cols > 0 (a [gate | up] layer prepared for the SwiGLU epilogue):
  // the prepared column 16 t + c is the layer's column 8 t + c for c < 8 and half_cols + 8 t +
  // c - 8 for c >= 8, so each lane holds a gate column beside its up column. Plain runs of such a
  // layer come here too, for the stores' column map.
  int half_cols = 0;
  // SwiGLU epilogue when `swiglu_out` is set (half_cols > 0): swiglu_out[row, j] = silu(gate) *
  // up of the values a plain run would store (the decoder's silu_mul arithmetic); y is not
  // written.
  void* swiglu_out = nullptr;
  int64_t ldsw = 0;
  int sw_code = 0;
};

// How a warp keeps its code loads in flight: one register stage of 8 x 16 bytes per lane, two of
// 4, or a cp.async ring of 4 x 2 in shared memory (M <= 8; with M 9-16 the one-stage kernel).
enum GemvPipe : int { kGemvOneStage = 0, kGemvTwoStages = 1, kGemvRing = 2 };
inline constexpr int kGemvPipes = 3;
// The ring kernel's group handling (4-bit): 32-row groups, 64-row, or >= 128 rows / channelwise.
enum GemvGroups : int { kGemvG32 = 0, kGemvG64 = 1, kGemvGWide = 2 };

struct GemvVariant {
  int code = kU4;  // kU4 / kU8
  bool bf16 = true;
  bool f16_scale = false;
  bool zeros = false;  // zero points (else symmetric)
  int n8 = 1;          // x rows in n8 tiles: 1 (M <= 8) or 2 (M <= 16)
  int pipe = kGemvOneStage;
  int groups = kGemvGWide;
  bool fuse = false;  // the norm fusion's kernel (4-bit ring only; int_gemv_launch_fused)
};
cudaError_t int_gemv_occupancy(const GemvVariant& variant, int threads, int* blocks);
// grid = ceil(tiles / tpb) blocks of tpb * wk warps.
cudaError_t int_gemv_launch(const GemvVariant& variant, const GemvParams& params,
                            cudaStream_t stream);
// The same with the norm fusion (variant.fuse set; 4-bit codes in the ring).
cudaError_t int_gemv_launch_fused(const GemvVariant& variant, const GemvParams& params,
                                  const GemvFusion& fusion, cudaStream_t stream);

// --- fp8_act_quant.cu: the fused dynamic activation quantizer ---

inline constexpr float kFp8ActScaleFloor = 1.0f / (448.0f * 512.0f);
enum Fp8ActKind : int { kActToken = 1, kActTensor = 2, kActStatic = 3, kActGroup = 4 };
cudaError_t fp8_quantize(const void* x, int64_t ldx, int code, int64_t M, int64_t K, int kind,
                         float static_scale, int64_t group_k, bool group_major, bool replicate,
                         uint8_t* codes, float* scales, float* scratch, cudaStream_t stream);

// --- decoder_ops.cu, decoder_rms_norm.cu, decoder_attention.cu: the decoder's operations ---
// (model/ops.h, for kernels/cuda/ops/cuda_ops.cc.) Matrices are (pointer to element (0, 0),
// leading dimension in elements, dtype code); activations f32 unless a code says otherwise.
// Index arrays (token ids, positions) are i32 device memory that the host cannot check without a
// wait: an out-of-range value writes NaN rows (embed, attention) or nothing (rope, store_kv)
// instead of reading or writing out of bounds. Conversions are load_exact / store_exact.

struct DecoderMatrix {
  void* data = nullptr;
  int64_t ld = 0;
  int code = kF32;
};

// out[t, :] = table[ids[t], :] (f32 / bf16 / f16 rows) as f32, for T rows of H columns.
cudaError_t decoder_embed(DecoderMatrix table, int64_t vocab, const int32_t* ids, int64_t T,
                          int64_t H, DecoderMatrix out, cudaStream_t stream);
// out = x * rsqrt(mean(x^2) + eps) * weight per row of `cols` (f32 x and weight; out f32 / bf16 /
// f16). With a delta (not null data): x += delta first, written back (add_rms_norm). The sum of
// squares is taken in f64 as the CPU ops take it.
cudaError_t decoder_rms_norm(DecoderMatrix x, DecoderMatrix delta, const float* weight, float eps,
                             DecoderMatrix out, int64_t rows, int64_t cols, cudaStream_t stream);
// In place per head of head_dim columns (f32 x): RMSNorm with weight [head_dim].
cudaError_t decoder_head_rms_norm(DecoderMatrix x, int64_t rows, int64_t heads, int64_t head_dim,
                                  const float* weight, float eps, cudaStream_t stream);
// In place (f32 x): pairs (i, i + head_dim / 2) of every head rotated by cos / sin rows
// positions[t] of the [table_positions, head_dim / 2] f32 tables.
cudaError_t decoder_rope(DecoderMatrix x, int64_t rows, int64_t heads, int64_t head_dim,
                         const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                         int64_t table_positions, cudaStream_t stream);
// One layer's KV cache rows from the call's first sequence on (model/ops.h KvCacheView): row t
// of a call writes and reads rows (t / sequence_rows) * capacity + position of k and v
// (sequence_rows 0: every row in the first sequence).
// An FP8 cache (k and v of code kF8, model/kv_fp8.h) has one f32 scale per cache row and kv
// head: element (row, head) of k_scale / v_scale at row * scale_ld + head.
struct DecoderCache {
  DecoderMatrix k;
  DecoderMatrix v;
  int64_t capacity = 0;
  int64_t sequence_rows = 0;
  float* k_scale = nullptr;
  float* v_scale = nullptr;
  int64_t scale_ld = 0;
};
// Rows t of k and v [T, kv_heads * head_dim] into cache position positions[t] (< capacity) of
// row t's sequence, converted to the caches' dtypes (an FP8 cache: decoder_store_kv_fp8).
cudaError_t decoder_store_kv(DecoderMatrix k, DecoderMatrix v, const int32_t* positions, int64_t T,
                             int64_t kv_heads, int64_t head_dim, DecoderCache cache,
                             cudaStream_t stream);
// decoder_rope of q [rows, q_heads * head_dim] and k [rows, kv_heads * head_dim], then
// decoder_store_kv of the rotated k and v: one launch, the same results bit for bit.
cudaError_t decoder_rope_store_kv(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v, int64_t rows,
                                  int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                  const int32_t* positions, DecoderMatrix cos, DecoderMatrix sin,
                                  int64_t table_positions, DecoderCache cache, cudaStream_t stream);

// decoder_kv_fp8.cu: the FP8 cache's forms of the two above (model/kv_fp8.h: e4m3 codes and a
// scale per row and kv head, bit for bit the CPU ops'), which they call for a cache of code kF8.
cudaError_t decoder_store_kv_fp8(DecoderMatrix k, DecoderMatrix v, const int32_t* positions,
                                 int64_t T, int64_t kv_heads, int64_t head_dim, DecoderCache cache,
                                 cudaStream_t stream);
cudaError_t decoder_rope_store_kv_fp8(DecoderMatrix q, DecoderMatrix k, DecoderMatrix v,
                                      int64_t rows, int64_t q_heads, int64_t kv_heads,
                                      int64_t head_dim, const int32_t* positions, DecoderMatrix cos,
                                      DecoderMatrix sin, int64_t table_positions,
                                      DecoderCache cache, cudaStream_t stream);

// The default longest part of the per-head kernel's short runs (DecoderAttention::short_part_keys).
inline constexpr int kDecoderShortPartKeys = 16;
// The default fewest keys of a split attention part (DecoderAttention::min_split_keys).
inline constexpr int kDecoderMinSplitKeys = 16;
struct DecoderAttention {
  DecoderMatrix q;  // f32 [rows, heads * head_dim]
  const int32_t* positions = nullptr;
  // The layer's key and value rows [sequences * capacity, kv_heads * head_dim]; row t reads its
  // sequence's (DecoderCache).
  DecoderCache cache;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  // at most kDecoderMaxHeadDim
  int window = 0;    // > 0: the last `window` positions only
  DecoderMatrix out;
  int64_t rows = 0;
  // > 1: the keys of each (row, head) split over that many blocks, merged by the last one through
  // partials [rows * heads * splits * (head_dim + 2)] f32 and counters [rows * heads] (zero before
  // the first launch; each launch leaves them zero).
  int splits = 1;
  float* partials = nullptr;
  int* counters = nullptr;
  // The fewest keys of a part: a row's keys are cut into max(ceil(keys / splits), this) (fewer
  // parts than splits at short contexts; the blocks of the others leave at once).
  int min_split_keys = kDecoderMinSplitKeys;
  // Run decoder_attention_grouped (a block per kv head, its query group together): the host sets
  // it where decoder_attention_grouped_fits, with splits and counters counted per kv head.
  bool grouped = false;
  // Run decoder_attention_mma (tensor cores, tiles of 64 query rows): the host sets it for prompt
  // chunks where decoder_attention_mma_fits. Takes precedence over `grouped`.
  bool mma = false;
  // The positions and every cache row before each row's position are settled before this launch
  // (AttentionShape::settled_history): the kernels read them, and request their first keys but
  // the newest, before they wait for the kernel before them.
  bool settled = false;
  // The per-head kernel's parts of at most this many keys (and at most 16) take runs of 2 keys
  // whose values load with them; 0: every part the runs of 4 (a measurement knob).
  int short_part_keys = kDecoderShortPartKeys;
};
// The fewest keys of a grouped kernel's part (one tile of its shared memory).
inline constexpr int kDecoderGroupedMinSplitKeys = 32;
inline constexpr int kDecoderMaxHeadDim = 512;
inline constexpr int kDecoderMaxSplits = 64;
// Causal grouped-query attention of every (row, query head) over the cache, online softmax in
// f32.
// With a.mma, decoder_attention_mma; with a.grouped, decoder_attention_grouped.
cudaError_t decoder_attention(const DecoderAttention& a, cudaStream_t stream);
// decoder_attention_group.cu: the same results (f32 rounding aside) from one block per (kv head,
// row, part) for every query head of the group, the keys and values through shared memory; for
// caches of one dtype whose rows are whole 16-byte vectors, head_dim <= 256, groups <= 16.
// With splits the counters are [rows * kv_heads].
bool decoder_attention_grouped_fits(const DecoderAttention& a);
cudaError_t decoder_attention_grouped(const DecoderAttention& a, cudaStream_t stream);
// decoder_attention_mma.cu: the same results (to ~1e-5 relative: q and the softmax weights enter
// the tensor cores as two bf16 terms each) from one block per (64 query rows of one sequence,
// query head) on mma.sync tiles; for bf16 caches whose rows are 16-byte aligned, head_dim 32, 64
// or 128, unsplit (prompt chunks).
bool decoder_attention_mma_fits(const DecoderAttention& a);
cudaError_t decoder_attention_mma(const DecoderAttention& a, cudaStream_t stream);
// out = silu(gate) * up (f32 gate and up; out f32 / bf16 / f16).
cudaError_t decoder_silu_mul(DecoderMatrix gate, DecoderMatrix up, DecoderMatrix out, int64_t rows,
                             int64_t cols, cudaStream_t stream);
// dst (f32) += src (f32 / bf16 / f16).
cudaError_t decoder_add(DecoderMatrix dst, DecoderMatrix src, int64_t rows, int64_t cols,
                        cudaStream_t stream);
// ids[t] = the first index of row t's maximum of f32 logits [rows, cols] (NaN never wins; 0 when
// nothing is above -inf): greedy decoding on the device (decoder_argmax.cu).
cudaError_t decoder_argmax(DecoderMatrix logits, int64_t rows, int64_t cols, int32_t* ids,
                           cudaStream_t stream);
// The candidates decoder_sample is sure to order per row (up to twice as many when a gathered
// prefix holds them; top-p runs and draws that reach past those: -1).
inline constexpr int kSampleCandidates = 4096;
// model/sampler.h SamplingOptions, and the draw's index.
struct SampleParams {
  double temperature;  // 0: greedy_token of the penalized row
  double top_p;
  double min_p;
  float repetition_penalty;  // applied where seen[id] != 0 (seen may be null when it is 1)
  int top_k;
  uint64_t seed;
  uint64_t step;
  // 1: order the leading candidates by radix selects only (tests; QLINEAR_SAMPLE_SELECT=radix),
  // not from a gathered prefix first.
  int radix_only;
};
// ids[t] = sample_token (model/sampler.h) of row t of f32 logits [rows, cols], whose values the
// kernel does not modify (the penalty is applied as they are read), or -1 where the top-p run
// or the draw walks past the first kSampleCandidates candidates (decoder_sample.cu).
cudaError_t decoder_sample(DecoderMatrix logits, int64_t rows, int64_t cols, const uint8_t* seen,
                           SampleParams params, int32_t* ids, cudaStream_t stream);
// dst = src, converted.
cudaError_t decoder_copy(DecoderMatrix src, DecoderMatrix dst, int64_t rows, int64_t cols,
                         cudaStream_t stream);

}  // namespace qlinear::cuda_launch
