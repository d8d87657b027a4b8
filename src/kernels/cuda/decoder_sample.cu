// Sampling on the device (model/ops.h sample): per row of f32 logits the token sample_token
// (model/sampler.h) picks, so that a sampled decode step returns one id instead of the whole row
// (Llama 3: a 513 KB download and 1.4-2.6 ms of host sampling per token against a ~2.5 ms step).
//
// One block per row, as the argmax: the row sits in L2 after the lm_head. The definition orders
// the candidates, but its sums run in id order, so only the leading candidates top-p, min-p and
// the draw reach need an order. Keys are 64-bit (descending logit, ascending id), each unique.
// The block gathers a prefix of the order (up to kBuffer keys under a bound a sorted strided
// sample sets; radix selects find the exact first kCap where the sample misjudges), sorts it in
// shared memory and walks it in double on one thread as the host loop does. The softmax total and
// the kept mass are block sums (another order than the host's id order: the picks agree up to the
// rounding of those double sums). A row whose top-p run or draw walks past the ordered candidates
// gets id -1: the caller samples it on the host, so the answer never depends on the cap.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_device.cuh"
#include "kernels/cuda/launch.h"

namespace qlinear::cuda_launch {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kCap = kSampleCandidates;  // candidates ordered on the device
constexpr int kBins = 256;
constexpr int kUnroll = 8;         // row values a thread loads together
constexpr int kBuffer = 2 * kCap;  // keys a gathered prefix may hold
constexpr int kSample = kCap;      // keys of the strided sample that sets the gather's threshold

// Shared memory: the ordered candidates' keys (room for a gathered prefix of up to kBuffer), and
// a region that holds the per-warp histograms while the radix selects run and the ordered
// candidates' p afterwards.
struct SampleShared {
  uint64_t order[kBuffer];
  union {
    uint32_t hist[kWarps][kBins];
    double p[kBuffer];
  } u;
};

// model/sampler.cc descending_key: smaller key, larger value; -0 as +0.
__device__ __forceinline__ uint32_t descending_key(float f) {
  if (f == 0.0f) f = 0.0f;
  const uint32_t u = __float_as_uint(f);
  const uint32_t ascending = (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
  return ~ascending;
}

// The row's value at i as the sampler sees it: the repetition penalty of a seen id (transformers'
// rule, in float as the host applies it), NaN as -inf.
struct Row {
  const float* logits;
  const uint8_t* seen;  // null: no penalty
  float penalty;
  int64_t cols;

  __device__ __forceinline__ float value(int64_t i) const {
    float l = logits[i];
    if (seen != nullptr && seen[i] != 0) l = l < 0 ? l * penalty : l / penalty;
    return isnan(l) ? -INFINITY : l;
  }
  // The candidate order's key: ascending key = descending value, ties by ascending id.
  __device__ __forceinline__ uint64_t key(int64_t i) const { return key_of(value(i), i); }
  static __device__ __forceinline__ uint64_t key_of(float v, int64_t i) {
    return (static_cast<uint64_t>(descending_key(v)) << 32) | static_cast<uint64_t>(i);
  }
};

// fn(i, in_row, value) over the row, every thread kUnroll loads in flight before it uses them (one
// load at a time per thread left the passes waiting on L2 latency: ~65 us each for 151936 values
// on an H100). Every lane of a warp makes the same calls (in_row false past the row), so fn may
// use warp collectives.
template <typename Fn>
__device__ __forceinline__ void for_each_value(const Row& row, Fn&& fn) {
  for (int64_t base = threadIdx.x; base - threadIdx.x < row.cols; base += kUnroll * kThreads) {
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = base + k * kThreads;
      v[k] = i < row.cols ? row.value(i) : -INFINITY;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = base + k * kThreads;
      fn(i, i < row.cols, v[k]);
    }
  }
}

// Block-wide sums and minimum; every thread calls them and gets the result.
template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

template <typename T>
__device__ T block_sum(T v, T* scratch) {
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by an earlier call
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kWarps ? scratch[threadIdx.x] : T(0);
  if (threadIdx.x < 32) v = warp_sum(v);
  if (threadIdx.x == 0) scratch[0] = v;
  __syncthreads();
  return scratch[0];
}

__device__ uint64_t block_min(uint64_t v, uint64_t* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const uint64_t o = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    v = o < v ? o : v;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kWarps ? scratch[threadIdx.x] : ~0ull;
    for (int offset = 16; offset > 0; offset /= 2) {
      const uint64_t o = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
      v = o < v ? o : v;
    }
    if (threadIdx.x == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

// The keys up to and including the one of rank `rank` (0-based) in ascending order are those
// with (key & mask) <= prefix: mask covers the high bytes a radix select had to look at.
struct Bound {
  uint64_t prefix = 0;
  uint64_t mask = 0;
  __device__ __forceinline__ bool admits(uint64_t key) const { return (key & mask) <= prefix; }
};

// Radix select, most significant byte first: per pass a histogram of the next byte over the keys
// that share the bytes chosen so far (per-warp histograms, lanes with equal bins aggregated), then
// the bin that holds the rank. Stops as soon as the rank is the last key of its bin (all of the
// bin is admitted); the id bytes above the row's largest id are skipped.
__device__ Bound select_rank(const Row& row, uint64_t rank, SampleShared& s, uint32_t* found) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const uint64_t last_id = static_cast<uint64_t>(row.cols - 1);
  int top_id_byte = 0;
  while (top_id_byte < 3 && (last_id >> (8 * (top_id_byte + 1))) != 0) ++top_id_byte;
  Bound b;
  uint64_t remaining = rank;
  for (int byte = 7; byte >= 0; --byte) {
    if (byte < 4 && byte > top_id_byte) continue;  // every id has 0 there
    const int shift = 8 * byte;
    for (int i = static_cast<int>(threadIdx.x); i < kWarps * kBins; i += kThreads) {
      (&s.u.hist[0][0])[i] = 0;
    }
    __syncthreads();
    for_each_value(row, [&](int64_t i, bool in_row, float v) {
      const uint64_t key = Row::key_of(v, i);
      const bool in = in_row && (key & b.mask) == b.prefix;
      const unsigned active = __ballot_sync(0xFFFFFFFFu, in);
      if (in) {
        const auto bin = static_cast<unsigned>((key >> shift) & 0xFFu);
        const unsigned peers = __match_any_sync(active, bin);
        if (lane == __ffs(peers) - 1) s.u.hist[warp][bin] += __popc(peers);
      }
      __syncwarp();  // this warp's counts are read and written again next time
    });
    __syncthreads();
    if (threadIdx.x < kBins) {
      uint32_t total = 0;
      for (int w = 0; w < kWarps; ++w) total += s.u.hist[w][threadIdx.x];
      s.u.hist[0][threadIdx.x] = total;
    }
    __syncthreads();
    // Warp 0 finds the bin: each lane sums 8 bins, a scan over the lanes, then the lane whose
    // range holds the rank walks its 8.
    if (warp == 0) {
      uint32_t counts[8];
      uint32_t mine = 0;
      for (int k = 0; k < 8; ++k) {
        counts[k] = s.u.hist[0][lane * 8 + k];
        mine += counts[k];
      }
      uint64_t inclusive = mine;
      for (int offset = 1; offset < 32; offset *= 2) {
        const uint64_t o = __shfl_up_sync(0xFFFFFFFFu, inclusive, offset);
        if (lane >= offset) inclusive += o;
      }
      const uint64_t before = inclusive - mine;
      if (remaining >= before && remaining < inclusive) {
        uint64_t below = before;
        int k = 0;
        while (remaining >= below + counts[k]) below += counts[k++];
        found[0] = static_cast<uint32_t>(lane * 8 + k);
        found[1] = static_cast<uint32_t>(remaining - below);  // rank inside the bin
        found[2] = counts[k];
      }
    }
    __syncthreads();
    const uint64_t bin = found[0];
    remaining = found[1];
    const uint32_t in_bin = found[2];
    b.prefix |= bin << shift;
    b.mask |= 0xFFull << shift;
    __syncthreads();  // found is rewritten by the next pass
    if (remaining + 1 == in_bin) break;
  }
  return b;
}

// Ascending bitonic sort of s.order[0 .. n) (n a power of two).
__device__ void sort_keys(SampleShared& s, int n) {
  for (int k = 2; k <= n; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = static_cast<int>(threadIdx.x); i < n; i += kThreads) {
        const int partner = i ^ j;
        if (partner > i) {
          const uint64_t a = s.order[i];
          const uint64_t c = s.order[partner];
          const bool ascending = (i & k) == 0;
          if ((a > c) == ascending) {
            s.order[i] = c;
            s.order[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
}

// Every key `admits` takes into s.order[0 .. capacity), in no order; returns how many it took
// (more than capacity: the surplus was not stored).
template <typename Admits>
__device__ uint32_t gather_keys(const Row& row, int capacity, SampleShared& s, uint32_t* gathered,
                                Admits&& admits) {
  if (threadIdx.x == 0) *gathered = 0;
  __syncthreads();
  for_each_value(row, [&](int64_t i, bool in_row, float v) {
    const uint64_t k = Row::key_of(v, i);
    if (in_row && admits(k)) {
      const unsigned slot = atomicAdd(gathered, 1u);
      if (slot < static_cast<unsigned>(capacity)) s.order[slot] = k;
    }
  });
  __syncthreads();
  const uint32_t n = *gathered;
  __syncthreads();  // *gathered is read before any thread reuses it
  return n;
}

// Sorts the n gathered keys s.order[0 .. n), padded to a power of two with keys past every real
// one.
__device__ void sort_gathered(SampleShared& s, int n) {
  int padded = 1;
  while (padded < n) padded *= 2;
  for (int i = n + static_cast<int>(threadIdx.x); i < padded; i += kThreads) s.order[i] = ~0ull;
  __syncthreads();
  sort_keys(s, padded);
}

// fn(value) of every candidate (the keys `candidates` admits).
template <typename Fn>
__device__ __forceinline__ void for_each_candidate(const Row& row, const Bound& candidates,
                                                   Fn&& fn) {
  for_each_value(row, [&](int64_t i, bool in_row, float v) {
    if (in_row && candidates.admits(Row::key_of(v, i))) fn(v);
  });
}

// model/sampler.cc sample_uniform.
__device__ double uniform(uint64_t seed, uint64_t step) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (step + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

// A sorted prefix of the row's order without radix passes: a strided sample of kSample keys,
// sorted, gives a key t below which about `target` keys are expected; one pass gathers every key
// <= t into s.order. Returns how many were gathered (then s.order[0 .. n) is sorted and is the
// first n keys of the order) or 0 when they were fewer than `need` or more than kBuffer (the
// caller then takes the radix selects).
__device__ int gather_prefix(const Row& row, int need, SampleShared& s, uint32_t* gathered,
                             uint64_t* threshold) {
  const int tid = static_cast<int>(threadIdx.x);
  uint64_t t = ~0ull;  // a row that fits the buffer: all of it
  if (row.cols > kBuffer) {
    const int64_t stride = row.cols / kSample;
    for (int j = tid; j < kSample; j += kThreads) s.order[j] = row.key(j * stride);
    __syncthreads();
    sort_keys(s, kSample);
    // Expected keys <= sample r: about (r + 1) * stride; aim at half as many again as needed.
    const int64_t target = need + (need / 2 > 256 ? need / 2 : 256);
    const int64_t r = target / stride;
    if (tid == 0) *threshold = r < kSample ? s.order[r] : ~0ull;
    __syncthreads();
    t = *threshold;
    if (t == ~0ull) return 0;  // the sample cannot bound enough keys below the buffer's size
  }
  const uint32_t n = gather_keys(row, kBuffer, s, gathered, [&](uint64_t k) { return k <= t; });
  if (n < static_cast<uint32_t>(need) || n > static_cast<uint32_t>(kBuffer)) return 0;
  sort_gathered(s, static_cast<int>(n));
  return static_cast<int>(n);
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(DecoderMatrix logits, int64_t cols, const uint8_t* seen, SampleParams o,
                  int32_t* ids) {
  extern __shared__ __align__(16) unsigned char raw[];
  SampleShared& s = *reinterpret_cast<SampleShared*>(raw);
  __shared__ uint64_t scratch_u64[kWarps];
  __shared__ double scratch_f64[kWarps];
  __shared__ unsigned long long scratch_count[kWarps];
  __shared__ uint32_t found[3];
  __shared__ uint32_t gathered;
  __shared__ uint64_t threshold;
  __shared__ int64_t kept_shared;

  cuda_device::chain_begin();
  const Row row{static_cast<const float*>(logits.data) + blockIdx.x * logits.ld,
                o.repetition_penalty != 1.0f ? seen : nullptr, o.repetition_penalty, cols};
  const int tid = static_cast<int>(threadIdx.x);
  const auto id_of = [&](uint64_t key) { return static_cast<int32_t>(key & 0xFFFFFFFFu); };

  if (o.temperature == 0.0) {
    // Greedy: the largest value, the lowest id among equals; 0 when nothing is above -inf.
    uint64_t first_key = ~0ull;
    for_each_value(row, [&](int64_t i, bool in_row, float v) {
      const uint64_t k = Row::key_of(v, i);
      if (in_row && k < first_key) first_key = k;
    });
    first_key = block_min(first_key, scratch_u64);
    if (tid == 0) ids[blockIdx.x] = row.value(id_of(first_key)) == -INFINITY ? 0 : id_of(first_key);
    return;
  }

  // s.order[0 .. ordered): the first `ordered` candidates in order (ordered >= m).
  const int64_t candidates = o.top_k > 0 && o.top_k < cols ? o.top_k : cols;
  const int m = static_cast<int>(candidates < kCap ? candidates : kCap);
  int ordered = o.radix_only != 0 ? 0 : gather_prefix(row, m, s, &gathered, &threshold);
  // The candidates by a bound on the key (radix select), where the candidates are not all ordered
  // and are not the whole row.
  Bound in_candidates;  // mask 0: every key
  const bool candidates_ordered = ordered > 0 && candidates <= ordered;
  if (candidates < cols && !candidates_ordered) {
    in_candidates = select_rank(row, static_cast<uint64_t>(candidates - 1), s, found);
  }
  if (ordered == 0) {
    // The radix selects: the m leading candidates, then their order.
    Bound in_order = in_candidates;
    if (m < candidates) in_order = select_rank(row, static_cast<uint64_t>(m - 1), s, found);
    // Exactly m admitted (the capacity bound costs nothing).
    (void)gather_keys(row, kCap, s, &gathered, [&](uint64_t k) { return in_order.admits(k); });
    sort_gathered(s, m);
    ordered = m;
  }
  const int usable = static_cast<int>(candidates < ordered ? candidates : ordered);

  const int32_t first_id = id_of(s.order[0]);
  const float first = row.value(first_id);
  if (first == INFINITY || first == -INFINITY) {
    // The softmax's limit at +inf, or nothing above -inf (greedy_token: 0).
    if (tid == 0) ids[blockIdx.x] = first == -INFINITY ? 0 : first_id;
    return;
  }

  // w = exp((l - first) / T) in double; the total over the candidates.
  const double first_d = static_cast<double>(first);
  const auto weight = [&](float v) {
    return isfinite(v) ? exp((static_cast<double>(v) - first_d) / o.temperature) : 0.0;
  };
  const auto ordered_weight = [&](int i) { return weight(row.value(id_of(s.order[i]))); };
  double part = 0.0;
  if (candidates_ordered) {
    for (int i = tid; i < candidates; i += kThreads) part += ordered_weight(i);
  } else {
    for_each_candidate(row, in_candidates, [&](float v) { part += weight(v); });
  }
  const double total = block_sum(part, scratch_f64);
  for (int i = tid; i < usable; i += kThreads) s.u.p[i] = ordered_weight(i) / total;
  __syncthreads();
  const double* p = s.u.p;  // p of the i-th candidate in order (i < usable)

  // min-p: every candidate whose p >= min_p * p_first (p falls along the order, so they lead it:
  // counted among the ordered ones unless the last of those passes too).
  int64_t kept = candidates;
  const double p_floor = o.min_p * p[0];
  const bool min_p = o.min_p > 0.0 && p_floor > 0.0;
  if (min_p) {
    unsigned long long passing = 0;
    if (candidates_ordered || p[usable - 1] < p_floor) {
      for (int i = tid; i < usable; i += kThreads) passing += p[i] >= p_floor ? 1 : 0;
    } else {
      for_each_candidate(row, in_candidates, [&](float v) {
        if (weight(v) / total >= p_floor) ++passing;
      });
    }
    passing = block_sum(passing, scratch_count);
    kept = passing < 1 ? 1 : (static_cast<int64_t>(passing) < candidates ? passing : candidates);
  }
  // The ordered candidates' mass (a block sum, which the sums in order below equal up to
  // rounding): where a walk cannot end among them, the row goes to the host without the walk.
  const bool partial = usable < candidates;
  double ordered_mass = 0.0;
  if (partial) {
    double mine = 0.0;
    for (int i = tid; i < usable; i += kThreads) mine += p[i];
    ordered_mass = block_sum(mine, scratch_f64);
  }
  constexpr double kMargin = 1e-12;  // far above the rounding of sums of <= 8192 terms
  // top-p: the shortest leading run whose p, summed in order, reaches top_p (one thread, the
  // host's sum). Past the ordered candidates: the host decides (-1).
  if (tid == 0) {
    kept_shared = kept;
    if (o.top_p < 1.0 && partial && ordered_mass < o.top_p - kMargin) {
      kept_shared = -1;
    } else if (o.top_p < 1.0) {
      double cumulative = 0.0;
      int count = 0;
      while (count < usable && cumulative < o.top_p) cumulative += p[count++];
      if (cumulative >= o.top_p || usable == candidates) {
        const int64_t run = count > 1 ? count : 1;
        kept_shared = run < kept ? run : kept;
      } else {
        kept_shared = -1;
      }
    }
  }
  __syncthreads();
  kept = kept_shared;
  if (kept < 0) {
    if (tid == 0) ids[blockIdx.x] = -1;
    return;
  }

  // The kept mass: a leading run of the order when it is ordered, else all candidates or
  // min-p's, over the row.
  double mass_part = 0.0;
  if (kept <= usable) {
    for (int i = tid; i < kept; i += kThreads) mass_part += p[i];
  } else if (kept == candidates) {
    for_each_candidate(row, in_candidates, [&](float v) { mass_part += weight(v) / total; });
  } else {
    for_each_candidate(row, in_candidates, [&](float v) {
      const double pv = weight(v) / total;
      if (pv >= p_floor) mass_part += pv;
    });
  }
  const double mass = block_sum(mass_part, scratch_f64);

  // The draw, walked in order (one thread, the host's sum).
  if (tid == 0) {
    const double u = uniform(o.seed, o.step) * mass;
    const int64_t walk = kept < usable ? kept : usable;
    if (walk < kept && u > ordered_mass + kMargin) {
      ids[blockIdx.x] = -1;  // the draw lands past the ordered candidates
      return;
    }
    double cumulative = 0.0;
    int32_t last_positive = first_id;
    int32_t id = -1;
    for (int i = 0; i < walk; ++i) {
      cumulative += p[i];
      if (p[i] > 0.0) last_positive = id_of(s.order[i]);
      if (u < cumulative) {
        id = id_of(s.order[i]);
        break;
      }
    }
    if (id < 0 && walk == kept) id = last_positive;  // u at the rounding edge of the mass
    ids[blockIdx.x] = id;                            // -1: the walk needs more than the order
  }
}

}  // namespace

cudaError_t decoder_sample(DecoderMatrix logits, int64_t rows, int64_t cols, const uint8_t* seen,
                           SampleParams params, int32_t* ids, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const std::size_t smem = sizeof(SampleShared);
  // Every call (per device, no static state: cheap next to the launch), as the attention does.
  const cudaError_t e = cudaFuncSetAttribute(
      sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  return cuda_device::launch_chained(sample_kernel, static_cast<unsigned>(rows), kThreads, smem,
                                     stream, logits, cols, seen, params, ids);
}

}  // namespace qlinear::cuda_launch
