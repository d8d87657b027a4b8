// Running a kernel in a test as the contract wants it: prepared on the CPU's DeviceContext, run
// with a workspace of exactly workspace_bytes(M) (so a kernel that carves more than it declares
// fails), into an output poisoned with NaN (so an unwritten element fails).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/device_context.h"
#include "kernels/kernel.h"
#include "qlinear/device.h"

namespace qlinear::test {

// A zeroed host tensor (a failed allocation fails the test).
inline Tensor host_tensor(DType dtype, Shape shape) {
  Result<Tensor> t = Tensor::allocate(dtype, std::move(shape));
  if (!t.ok()) {
    ADD_FAILURE() << t.status().to_string();
    return Tensor();
  }
  return std::move(t).value();
}

inline DeviceContext& cpu_context() {
  static DeviceContext* context = [] {
    Result<Device> cpu = detect_device("cpu");
    Result<DeviceContext*> ctx = device_context(cpu.ok() ? *cpu : Device{});
    return ctx.ok() ? *ctx : nullptr;
  }();
  return *context;
}

inline Result<std::unique_ptr<PreparedLinear>> prepare_on_cpu(const LinearKernel& kernel,
                                                              const Canonical& weights,
                                                              const LinearProblem& problem) {
  return kernel.prepare(weights, problem, cpu_context());
}

// y [M, N] = prepared(x) in the prepared problem's output dtype, threads 0 = all.
inline Result<Tensor> run_on_cpu(const PreparedLinear& prepared, const Tensor& x, int threads = 0) {
  const int64_t M = x.shape().empty() ? 0 : x.shape()[0];
  QL_ASSIGN_OR_RETURN(Tensor y,
                      Tensor::allocate(prepared.problem().out_dtype, {M, prepared.problem().N}));
  // NaN in every dtype: f32 0x7FC00000 (the f16/bf16 halves 0x7FC0 are NaN too).
  auto* words = static_cast<uint16_t*>(y.data());
  for (std::size_t i = 0; i < y.nbytes() / 2; ++i) words[i] = 0x7FC0;
  const std::size_t bytes = prepared.workspace_bytes(M);
  QL_ASSIGN_OR_RETURN(Tensor workspace,
                      Tensor::allocate(DType::kU8, {static_cast<int64_t>(bytes)}));
  ExecContext ctx;
  ctx.threads = threads;
  ctx.workspace = {workspace.data(), bytes, Location::host()};
  QL_RETURN_IF_ERROR(prepared.run(x.matrix(), y.matrix(), ctx));
  return y;
}

// The context of a real device (cpu, opencl:i); nullptr (with the error in `why`) when the
// device has none.
inline DeviceContext* context_for(const Device& device, std::string* why = nullptr) {
  Result<DeviceContext*> ctx = device_context(device);
  if (!ctx.ok()) {
    if (why != nullptr) *why = ctx.status().to_string();
    return nullptr;
  }
  return *ctx;
}

// y = prepared(x) on the prepared layer's device: x uploaded, y allocated there and poisoned with
// NaN (an unwritten element fails the comparison), a device workspace of exactly
// workspace_bytes(M), the run, a wait on the queue, y downloaded. On the host this is run_on_cpu.
inline Result<Tensor> run_on_device(const PreparedLinear& prepared, DeviceContext& device,
                                    const Tensor& x) {
  if (prepared.location().host_accessible()) return run_on_cpu(prepared, x);
  const int64_t M = x.shape().empty() ? 0 : x.shape()[0];
  const Allocator& memory = device.allocator();
  QL_ASSIGN_OR_RETURN(Tensor dx, Tensor::allocate(x.dtype(), x.shape(), memory));
  QL_RETURN_IF_ERROR(device.upload(dx.data(), 0, x.data(), x.nbytes()));
  const DType out = prepared.problem().out_dtype;
  QL_ASSIGN_OR_RETURN(Tensor dy, Tensor::allocate(out, {M, prepared.problem().N}, memory));
  // fill() writes whole words: an odd number of 16-bit outputs leaves its last one unpoisoned.
  QL_RETURN_IF_ERROR(device.fill(dy.data(), 0, 0x7FC07FC0u, dy.nbytes() / 4 * 4));
  const std::size_t bytes = prepared.workspace_bytes(M);
  QL_ASSIGN_OR_RETURN(Tensor workspace,
                      Tensor::allocate(DType::kU8, {static_cast<int64_t>(bytes)}, memory));
  ExecContext ctx;
  ctx.stream = device.default_stream();
  ctx.workspace = {workspace.data(), bytes, memory.location()};
  QL_RETURN_IF_ERROR(prepared.run(dx.matrix(), dy.matrix(), ctx));
  QL_RETURN_IF_ERROR(device.synchronize(ctx.stream));
  QL_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(out, {M, prepared.problem().N}));
  QL_RETURN_IF_ERROR(device.download(y.data(), dy.data(), 0, y.nbytes()));
  return y;
}

// Any host tensor of f32, bf16 or f16 as floats.
inline std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  if (!out.empty()) convert_to_f32(t.data(), t.dtype(), out.size(), out.data());
  return out;
}

}  // namespace qlinear::test
