// What `qlinear bench --device cuda` needs from the CUDA runtime, without CUDA types in the header
// (the bench driver is plain C++): the device-to-device copy bandwidth measured in the same
// process, and per-call GPU times from CUDA events.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/status.h"

namespace qlinear::cuda_bench {

// GB/s (1e9 bytes/s) of cudaMemcpyAsync device to device over `bytes` (bytes read plus bytes
// written, as gpu_peers.py counts them), median of `reps` copies.
Result<double> copy_bandwidth_gbps(int device, std::size_t bytes, int reps);

// Runs call(i) for i = 0..reps-1 on `stream` (a cudaStream_t), each between its own pair of
// events, queued behind a spin kernel so that the host's launch cost stays out of the GPU times;
// returns each call's seconds. A failed call or CUDA error is returned as an error.
Result<std::vector<double>> time_calls(int device, void* stream, int reps,
                                       const std::function<Status(int)>& call);

}  // namespace qlinear::cuda_bench
