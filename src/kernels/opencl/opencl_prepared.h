// What the OpenCL kernels' host code shares (only with QLINEAR_WITH_OPENCL): a prepared layer
// that owns its weight buffers and kernel objects on one device, views as the kernels take them,
// and uploads of host vectors.
#pragma once

#if defined(QLINEAR_WITH_OPENCL)

#include <CL/cl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/activation_quant.h"
#include "kernels/common/workspace.h"
#include "kernels/kernel.h"
#include "kernels/opencl/runtime/opencl_runtime.h"

namespace qlinear::opencl {

// A matrix view of OpenCL memory as kernel arguments: buffer, element offset, leading dimension
// and element type.
struct ClView {
  cl_mem mem = nullptr;
  cl_ulong offset = 0;
  cl_ulong ld = 0;
  cl_int dtype = 0;
};
template <class View>
ClView cl_view(const View& v) {
  return {mem_of(v.data()), static_cast<cl_ulong>(v.offset()), static_cast<cl_ulong>(v.ld()),
          static_cast<cl_int>(dtype_code(v.dtype()))};
}

// The queue a run enqueues on: the caller's (ExecContext::stream) or the device's default one.
inline cl_command_queue queue_of(const ExecContext& ctx, const Context& device) {
  return ctx.stream != nullptr ? static_cast<cl_command_queue>(ctx.stream) : device.queue();
}

class PreparedOnDevice : public PreparedLinear {
 public:
  PreparedOnDevice(const LinearProblem& problem, Context& device)
      : PreparedLinear(problem, device.location()), device_(&device) {}

 protected:
  Context& device() const { return *device_; }
  // A buffer holding `values` (one element when empty, so every kernel argument is a buffer).
  template <class T>
  Status upload(const std::vector<T>& values, std::string_view what, BufferHandle& out) {
    static const T kZero{};
    const void* data = values.empty() ? &kZero : values.data();
    const std::size_t bytes = (values.empty() ? 1 : values.size()) * sizeof(T);
    QL_ASSIGN_OR_RETURN(out, device_->upload_buffer(data, bytes, what));
    return Status::ok_status();
  }
  // clSetKernelArg is not thread-safe on one kernel: runs of one layer from several threads
  // (each with its own workspace) take turns setting arguments and enqueueing.
  std::mutex& launch_mutex() const { return launch_mutex_; }

 private:
  Context* device_;
  mutable std::mutex launch_mutex_;
};

// The int kernels' prepared layer: the canonical words, scales, zero points, g_idx and bias as
// buffers, and one kernel of the signature int_gemm_portable.cl and int_subgroup_intel.cl share,
// launched over (N, M / 4) work-items with `local` columns per work-group (0: the runtime picks).
class PreparedIntKernel final : public PreparedOnDevice {
 public:
  PreparedIntKernel(const LinearProblem& problem, Context& device, std::string_view name)
      : PreparedOnDevice(problem, device), name_(name) {}

  Status load(const IntWeights& w, std::string_view file, std::string_view kernel,
              std::size_t local) {
    local_ = local;
    w_ = {w.bits, w.K, w.N, w.group_size, !w.zeros.empty(), !w.g_idx.empty(), !w.bias.empty()};
    QL_ASSIGN_OR_RETURN(kernel_, device().kernel(file, kernel));
    QL_RETURN_IF_ERROR(upload(w.qweight, "qweight", qweight_));
    QL_RETURN_IF_ERROR(upload(w.scales, "scales", scales_));
    QL_RETURN_IF_ERROR(upload(w.zeros, "zeros", zeros_));
    QL_RETURN_IF_ERROR(upload(w.g_idx, "g_idx", g_idx_));
    return upload(w.bias, "bias", bias_);
  }

 protected:
  Status do_run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const override {
    const ClView xv = cl_view(x);
    const ClView yv = cl_view(y);
    const cl_int M = static_cast<cl_int>(x.rows());
    const cl_int K = static_cast<cl_int>(w_.K);
    const cl_int N = static_cast<cl_int>(w_.N);
    const cl_mem q = qweight_.get(), s = scales_.get(), z = zeros_.get(), g = g_idx_.get(),
                 b = bias_.get();
    const std::lock_guard<std::mutex> lock(launch_mutex());
    const std::size_t columns = static_cast<std::size_t>(N);
    const std::size_t row_blocks = static_cast<std::size_t>((M + kRows - 1) / kRows);
    const auto run = [&](std::initializer_list<std::size_t> local) {
      return launch(queue_of(ctx, device()), kernel_.get(), name_, {columns, row_blocks}, local,
                    {arg(xv.mem),
                     arg(xv.offset),
                     arg(xv.ld),
                     arg(xv.dtype),
                     arg(q),
                     arg(s),
                     arg(z),
                     arg(g),
                     arg(b),
                     arg(yv.mem),
                     arg(yv.offset),
                     arg(yv.ld),
                     arg(yv.dtype),
                     arg(M),
                     arg(K),
                     arg(N),
                     arg(w_.bits),
                     arg(w_.group_size),
                     arg(w_.has_zeros),
                     arg(w_.has_g_idx),
                     arg(w_.has_bias)});
    };
    return local_ == 0 ? run({0}) : run({local_, 1});
  }

 private:
  struct Shape {
    cl_int bits;
    int64_t K, N;
    cl_int group_size, has_zeros, has_g_idx, has_bias;
  };
  static constexpr int kRows = 4;  // QL_ROWS of the int kernels
  std::string_view name_;
  std::size_t local_ = 0;
  Shape w_{};
  KernelHandle kernel_;
  BufferHandle qweight_, scales_, zeros_, g_idx_, bias_;
};

// The W8A8 activation quantizer on the device: the quantize kernels of fp8_w8a8_portable.cl
// (activation_quant.h's contract, bit for bit) writing e4m3 codes [M, K] and their scales into
// regions of the run's workspace. Its owner holds its launch mutex around run().
class ActivationQuantizer {
 public:
  struct Regions {
    cl_ulong codes = 0, scales = 0, row_max = 0;  // byte offsets into the workspace
  };
  Status load(Context& device, ActQuant act, int64_t group_k, float static_scale, int64_t K) {
    act_ = act;
    group_k_ = static_cast<cl_int>(act == ActQuant::kDynamicGroup ? group_k : K);
    static_scale_ = static_scale;
    K_ = static_cast<cl_int>(K);
    constexpr const char* kFile = "fp8_w8a8_portable.cl";
    QL_ASSIGN_OR_RETURN(groups_, device.kernel(kFile, "quantize_groups"));
    QL_ASSIGN_OR_RETURN(row_absmax_, device.kernel(kFile, "row_absmax"));
    QL_ASSIGN_OR_RETURN(tensor_scale_, device.kernel(kFile, "tensor_scale"));
    QL_ASSIGN_OR_RETURN(tensor_, device.kernel(kFile, "quantize_tensor"));
    return Status::ok_status();
  }
  Regions carve(WorkspaceOffsets& c, int64_t M) const {
    Regions r;
    const int64_t scales = std::max<int64_t>(activation_scale_count(act_, M, K_, group_k_), 1);
    r.codes = c.take(static_cast<std::size_t>(std::max<int64_t>(M * K_, 1)));
    r.scales = c.take(sizeof(float) * static_cast<std::size_t>(scales));
    r.row_max = c.take(sizeof(float) * static_cast<std::size_t>(std::max<int64_t>(M, 1)));
    return r;
  }
  // QL_ACT_TOKEN (0), QL_ACT_GROUP (1) or QL_ACT_TENSOR (2) of the .cl files.
  cl_int kind_code() const {
    if (act_ == ActQuant::kDynamicToken) return 0;
    return act_ == ActQuant::kDynamicGroup ? 1 : 2;
  }
  cl_int group_k() const { return group_k_; }
  Status run(cl_command_queue queue, const ClView& x, cl_mem ws, const Regions& r, cl_int M) const {
    const auto rows = static_cast<std::size_t>(M);
    const auto K = static_cast<std::size_t>(K_);
    if (kind_code() != 2) {
      const std::size_t groups = (K + static_cast<std::size_t>(group_k_) - 1) / group_k_;
      return launch(queue, groups_.get(), "quantize_groups", {groups, rows}, {0},
                    {arg(x.mem), arg(x.offset), arg(x.ld), arg(x.dtype), arg(ws), arg(r.codes),
                     arg(r.scales), arg(M), arg(K_), arg(group_k_)});
    }
    const cl_int dynamic = act_ == ActQuant::kDynamicTensor ? 1 : 0;
    if (dynamic != 0) {
      QL_RETURN_IF_ERROR(launch(queue, row_absmax_.get(), "row_absmax", {rows}, {0},
                                {arg(x.mem), arg(x.offset), arg(x.ld), arg(x.dtype), arg(ws),
                                 arg(r.row_max), arg(M), arg(K_)}));
    }
    QL_RETURN_IF_ERROR(
        launch(queue, tensor_scale_.get(), "tensor_scale", {1}, {1},
               {arg(ws), arg(r.row_max), arg(r.scales), arg(M), arg(dynamic), arg(static_scale_)}));
    return launch(queue, tensor_.get(), "quantize_tensor", {K, rows}, {0},
                  {arg(x.mem), arg(x.offset), arg(x.ld), arg(x.dtype), arg(ws), arg(r.codes),
                   arg(r.scales), arg(M), arg(K_)});
  }

 private:
  ActQuant act_ = ActQuant::kDynamicToken;
  cl_int group_k_ = 0;
  cl_int K_ = 0;
  float static_scale_ = 0.0f;
  KernelHandle groups_, row_absmax_, tensor_scale_, tensor_;
};

// FP8 weights [N, K] as the OpenCL FP8 kernels read them: [K, N] bytes (neighbouring columns
// of one row next to each other).
inline std::vector<uint8_t> fp8_k_major(const Fp8Weights& w) {
  std::vector<uint8_t> out(w.qweight.size());
  for (int64_t n = 0; n < w.N; ++n) {
    for (int64_t k = 0; k < w.K; ++k) out[k * w.N + n] = w.qweight[n * w.K + k];
  }
  return out;
}

}  // namespace qlinear::opencl

#endif  // QLINEAR_WITH_OPENCL
