// Streaming-read probe for the int decode kernel's memory pattern (issue 12): how fast can the
// H200 read a decode layer's weight bytes when the reads are laid out as cuda.int.gemv.sm80 lays
// them out, against the best pattern? No arithmetic beyond an XOR, so the times are the memory
// system's alone.
//
// Patterns (each reads every byte of the buffer once, buffers rotated past the L2):
// - grid:  grid-stride 16-byte loads, 8 in flight per thread (the copy-bandwidth pattern);
// - tile:  the gemv's: one warp per 16-column tile stream of S bytes (a tile's K rows, contiguous),
//          wk warps of a block splitting it, each through a 4-slot cp.async ring of 1 KB stages;
// - inter: the same warps and ring, but stage j of every tile stored next to stage j of the
//          neighbouring tiles (address (j * tiles + tile) KB), so warps running together read
//          adjacent memory.
//
//   stream_probe [SHAPE...]   SHAPE = KxN of a 4-bit layer (default: the decode shapes)
// Prints one JSON object per line.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                    \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const auto s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__global__ void grid_kernel(const uint4* __restrict__ src, int64_t n, uint32_t* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (; i + 7 * stride < n; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = ld_stream(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < 8; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = ld_stream(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) out[0] = acc;
}

constexpr int kSlots = 4;
constexpr int kWarps = 8;

// Warp w of block b: tile b * (8 / wk) + w / wk, slice w % wk of its `stages` 1 KB stages.
template <bool kInterleaved>
__global__ void __launch_bounds__(256, 3)
    ring_kernel(const char* __restrict__ src, int tiles, int stages, int wk, uint32_t* out) {
  __shared__ uint4 ring[kWarps * kSlots * 2 * 32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tile = blockIdx.x * (kWarps / wk) + warp / wk;
  const int slice = warp % wk;
  if (tile >= tiles) return;
  const int s0 = slice * stages / wk, s1 = (slice + 1) * stages / wk;
  const int n = s1 - s0;
  auto addr = [&](int j) -> const char* {
    const int64_t stage = s0 + j;
    const int64_t kb =
        kInterleaved ? stage * tiles + tile : static_cast<int64_t>(tile) * stages + stage;
    return src + kb * 1024 + lane * 16;
  };
  uint4* mine = ring + warp * (kSlots * 2 * 32) + lane;
  auto issue = [&](int j) {
    uint4* slot = mine + (j & (kSlots - 1)) * 64;
    if (j < n) {
      cp_async16(slot, addr(j));
      cp_async16(slot + 32, addr(j) + 512);
    }
    commit();
  };
  uint32_t acc = 0;
  for (int j = 0; j < kSlots - 1; ++j) issue(j);
  for (int j = 0; j < n; ++j) {
    issue(j + kSlots - 1);
    wait_group<kSlots - 1>();
    const uint4* slot = mine + (j & (kSlots - 1)) * 64;
    const uint4 a = slot[0], b = slot[32];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
  }
  if (acc == 0x12345678u) out[0] = acc;
}

// The gemv's per-stage work added to the tile pattern, one part at a time, to see which part
// slows the stream: kMma mma.m16n8k16 per stage (two accumulator chains, A from the codes), the
// stage's x fragments (4 x 16 bytes per lane) from global memory (kX == 1, issued before the
// wait as the gemv issues them) or from shared memory (kX == 2, the block's copy of x made at
// the start), and kRing ring slots.
template <int kRing, int kMma, int kX, int kS = 0>
__global__ void __launch_bounds__(256, 3)
    work_kernel(const char* __restrict__ src, const __half* __restrict__ x, int K, int tiles,
                int stages, int wk, uint32_t* out, const uint32_t* __restrict__ scales = nullptr) {
  extern __shared__ uint4 dyn[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tile = blockIdx.x * (kWarps / wk) + warp / wk;
  const int slice = warp % wk;
  uint4* xs = dyn + kWarps * kRing * 2 * 32;
  if constexpr (kX == 2) {
    for (int i = threadIdx.x; i < K / 8; i += blockDim.x)
      xs[i] = reinterpret_cast<const uint4*>(x)[i];
    __syncthreads();
  }
  if (tile >= tiles) return;
  const int s0 = slice * stages / wk, s1 = (slice + 1) * stages / wk;
  const int n = s1 - s0;
  const int t = lane & 3;
  auto addr = [&](int j) -> const char* {
    return src + (static_cast<int64_t>(tile) * stages + s0 + j) * 1024 + lane * 16;
  };
  uint4* mine = dyn + warp * (kRing * 2 * 32) + lane;
  // kS: the stage's scale pair (lane g's of 8, 4 bytes; the gemv's [tiles][groups][8] layout,
  // one group per stage) loaded one stage ahead into registers (1) or through the ring (2).
  uint32_t* sring =
      reinterpret_cast<uint32_t*>(xs + (kX == 2 ? K / 8 : 0)) + warp * kRing * 32 + lane;
  const uint32_t* sc = scales + static_cast<int64_t>(tile) * stages * 8 + s0 * 8 + (lane >> 2);
  auto issue = [&](int j) {
    uint4* slot = mine + (j % kRing) * 64;
    if (j < n) {
      cp_async16(slot, addr(j));
      cp_async16(slot + 32, addr(j) + 512);
      if constexpr (kS == 2) {
        const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(sring + (j % kRing) * 32));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(sc + j * 8));
      }
    }
    commit();
  };
  uint32_t s_next = 0;
  if constexpr (kS == 1) s_next = __ldg(sc);
  float d[4] = {0, 0, 0, 0}, e[4] = {0, 0, 0, 0};
  uint32_t acc = 0;
  for (int j = 0; j < kRing - 1; ++j) issue(j);
  for (int j = 0; j < n; ++j) {
    uint4 xv[4] = {{0x3c003c00u, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
    const int xoff = (s0 + j) * 16 + t;  // uint4 index: 128 rows per stage = 16 uint4
    if constexpr (kX == 1) {
#pragma unroll
      for (int h = 0; h < 4; ++h) xv[h] = __ldg(reinterpret_cast<const uint4*>(x) + xoff + 4 * h);
    }
    issue(j + kRing - 1);
    uint32_t s_cur = 0;
    if constexpr (kS == 1) {
      s_cur = s_next;
      if (j + 1 < n) s_next = __ldg(sc + (j + 1) * 8);
    }
    wait_group<kRing - 1>();
    const uint4* slot = mine + (j % kRing) * 64;
    uint4 a = slot[0];
    const uint4 b = slot[32];
    if constexpr (kS == 2) s_cur = sring[(j % kRing) * 32];
    a.x ^= s_cur;
    if constexpr (kX == 2) {
#pragma unroll
      for (int h = 0; h < 4; ++h) xv[h] = xs[xoff + 4 * h];
    }
    if constexpr (kMma == 0) {
      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ xv[0].x ^ xv[1].y ^ xv[2].z ^ xv[3].w;
    } else {
#pragma unroll
      for (int m = 0; m < kMma; ++m) {
        const uint4& w = (m & 4) ? b : a;
        const uint32_t av[4] = {w.x ^ (m & 1), w.y, w.z, w.w};
        const uint4& xx = xv[(m >> 1) & 3];
        float* c = (m & 1) ? e : d;
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(av[0]), "r"(av[1]), "r"(av[2]), "r"(av[3]), "r"(xx.x), "r"(xx.y));
      }
    }
  }
  if (acc == 0x12345678u || d[0] + e[1] == 1.2345f) out[0] = acc;
}

int main(int argc, char** argv) {
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) shapes.push_back(argv[i]);
  if (shapes.empty()) {
    shapes = {"8192x57344", "4096x28672", "28672x8192", "8192x10240",
              "14336x4096", "4096x6144",  "4096x4096"};
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  uint32_t* out = nullptr;
  CHECK(cudaMalloc(&out, 4));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (const std::string& shape : shapes) {
    const int64_t K = std::atoll(shape.c_str());
    const int64_t N = std::atoll(shape.c_str() + shape.find('x') + 1);
    const int tiles = static_cast<int>(N / 16);
    const int stages = static_cast<int>(K / 128);  // 16 columns x 128 rows x 4 bits = 1 KB
    const int64_t bytes = static_cast<int64_t>(tiles) * stages * 1024;
    const int nbuf = static_cast<int>(std::max<int64_t>(2, (int64_t{600} << 20) / bytes + 1));
    std::vector<char*> bufs(nbuf);
    for (auto& b : bufs) {
      CHECK(cudaMalloc(&b, bytes));
      CHECK(cudaMemset(b, 1, bytes));
    }
    auto time = [&](auto launch) {
      std::vector<float> t;
      for (int r = 0; r < 3 + 20; ++r) {
        const char* b = bufs[r % nbuf];
        CHECK(cudaEventRecord(e0));
        launch(b);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 3) t.push_back(ms * 1000.0f);
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    auto report = [&](const char* pattern, int wk, float us) {
      std::printf(
          "{\"shape\": \"%s\", \"pattern\": \"%s\", \"wk\": %d, \"bytes\": %lld, \"us\": %.2f, "
          "\"gbps\": %.0f}\n",
          shape.c_str(), pattern, wk, static_cast<long long>(bytes), us, bytes / (us * 1e3));
      std::fflush(stdout);
    };
    {
      const int blocks = prop.multiProcessorCount * 8;
      const float us = time([&](const char* b) {
        grid_kernel<<<blocks, 256>>>(reinterpret_cast<const uint4*>(b), bytes / 16, out);
      });
      report("grid", 0, us);
    }
    for (int wk : {1, 2, 4, 8}) {
      const int blocks = (tiles + kWarps / wk - 1) / (kWarps / wk);
      report("tile", wk, time([&](const char* b) {
               ring_kernel<false><<<blocks, 256>>>(b, tiles, stages, wk, out);
             }));
      report("inter", wk, time([&](const char* b) {
               ring_kernel<true><<<blocks, 256>>>(b, tiles, stages, wk, out);
             }));
    }
    {
      __half* x = nullptr;
      CHECK(cudaMalloc(&x, K * 2));
      CHECK(cudaMemset(x, 0, K * 2));
      uint32_t* scales = nullptr;
      CHECK(cudaMalloc(&scales, static_cast<std::size_t>(tiles) * stages * 32));
      CHECK(cudaMemset(scales, 0, static_cast<std::size_t>(tiles) * stages * 32));
      auto run = [&](auto kernel, int ring, int xmode, const char* name) {
        const std::size_t smem = static_cast<std::size_t>(kWarps) * ring * 2 * 32 * 16 +
                                 (xmode == 2 ? K * 2 : 0) + kWarps * ring * 32 * 4;
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
        for (int wk : {1, 4, 8}) {
          const int blocks = (tiles + kWarps / wk - 1) / (kWarps / wk);
          report(name, wk, time([&](const char* b) {
                   kernel<<<blocks, 256, smem>>>(b, x, static_cast<int>(K), tiles, stages, wk, out,
                                                 scales);
                 }));
        }
      };
      run(work_kernel<4, 16, 1>, 4, 1, "r4_m16_xg");
      run(work_kernel<4, 16, 1, 1>, 4, 1, "r4_m16_xg_sreg1");
      run(work_kernel<4, 16, 1, 2>, 4, 1, "r4_m16_xg_sring");
      run(work_kernel<4, 0, 0, 1>, 4, 0, "r4_m0_x0_sreg1");
      run(work_kernel<4, 8, 1, 1>, 4, 1, "r4_m8_xg_sreg1");
      run(work_kernel<4, 8, 1, 2>, 4, 1, "r4_m8_xg_sring");
      run(work_kernel<6, 16, 1, 2>, 6, 1, "r6_m16_xg_sring");
      CHECK(cudaFree(scales));
      CHECK(cudaFree(x));
    }
    CHECK(cudaGetLastError());
    for (auto& b : bufs) CHECK(cudaFree(b));
  }
  return 0;
}
