// The decoder's operations (src/model/ops.h) on one OpenCL device: every matrix view lives in
// that device's buffers (Location::opencl(i)), the kernels are decoder_ops.cl, and each call only
// enqueues on the device's queue (in order, so ops and linear layers of one forward follow each
// other without waits).
//
// Index views (embed's ids, the positions of rope, store_kv and attention) may live in host
// memory or in the device's memory. Host ones are checked as the CPU ops check them (an id
// outside the vocabulary, a position outside the cache or rotary table is an error naming it)
// and written to a small device buffer with a blocking write; device ones cannot be read without
// a wait, so the kernels guard them instead (NaN rows for an out-of-range id or position).
#include <CL/cl.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/opencl/runtime/opencl_runtime.h"
#include "model/ops.h"
#include "model/ops_checks.h"

namespace qlinear {
namespace {

using opencl::arg;
constexpr const char* kFile = "decoder_ops.cl";
constexpr std::size_t kNormLanes = 64;  // QL_NORM_LANES of decoder_ops.cl
constexpr int64_t kMaxHeadDim = 512;    // QL_MAX_HEAD_DIM of decoder_ops.cl

struct View {
  cl_mem mem;
  cl_ulong offset;
  cl_ulong ld;
  cl_int dtype;
};

// dtype codes of decoder_ops.cl: common.cl's QL_F32 / QL_BF16 / QL_F16, and QL_E4M3 (3) for an
// FP8 KV cache's codes.
View view_of(ConstMatrixView v) {
  const int code = v.dtype() == DType::kF8E4M3 ? 3 : opencl::dtype_code(v.dtype());
  return {opencl::mem_of(v.data()), static_cast<cl_ulong>(v.offset()),
          static_cast<cl_ulong>(v.ld()), static_cast<cl_int>(code)};
}

using ops_checks::float_dtype;

class OpenClOps final : public DecoderOps {
 public:
  explicit OpenClOps(opencl::Context& device) : device_(device) {}

  Status load() {
    const char* names[] = {"embed",      "rms_norm",  "head_rms_norm", "rope",
                           "store_rows", "attention", "silu_mul",      "add",
                           "copy",       "argmax",    "store_kv_fp8"};
    opencl::KernelHandle* slots[] = {&embed_,      &rms_norm_,  &head_rms_norm_, &rope_,
                                     &store_rows_, &attention_, &silu_mul_,      &add_,
                                     &copy_,       &argmax_,    &store_kv_fp8_};
    for (std::size_t i = 0; i < std::size(names); ++i) {
      QL_ASSIGN_OR_RETURN(*slots[i], device_.kernel(kFile, names[i]));
    }
    return Status::ok_status();
  }

  Status embed(ConstMatrixView table, ConstMatrixView ids, MatrixView out) override {
    const int64_t T = ids.cols();
    QL_RETURN_IF_ERROR(require_shape("embed", "out", out, T, table.cols()));
    QL_RETURN_IF_ERROR(require_f32("embed", "out", out));
    QL_RETURN_IF_ERROR(require_device("embed", table, "the table"));
    QL_RETURN_IF_ERROR(require_float("embed", "the table", table));
    QL_ASSIGN_OR_RETURN(const Index index,
                        indices("embed", ids, table.rows(), [&](int32_t id, int64_t t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "token id {} at position {} is outside the vocabulary "
                                            "[0, {})",
                                            id, t, table.rows());
                        }));
    const View tv = view_of(table), ov = view_of(out);
    const cl_long vocab = table.rows();
    const cl_int H = static_cast<cl_int>(table.cols()), rows = static_cast<cl_int>(T);
    return run(embed_, "embed", {dim(H), dim(rows)},
               {arg(tv.mem), arg(tv.offset), arg(tv.ld), arg(tv.dtype), arg(vocab), arg(index.mem),
                arg(index.offset), arg(ov.mem), arg(ov.offset), arg(ov.ld), arg(H), arg(rows)});
  }

  Status rms_norm(ConstMatrixView x, ConstMatrixView weight, float eps, MatrixView out) override {
    QL_RETURN_IF_ERROR(require_f32("rms_norm", "x", x));
    QL_RETURN_IF_ERROR(require_device("rms_norm", x, "x"));
    QL_RETURN_IF_ERROR(require_shape("rms_norm", "out", out, x.rows(), x.cols()));
    QL_RETURN_IF_ERROR(require_float("rms_norm", "out", out));
    QL_RETURN_IF_ERROR(require_shape("rms_norm", "weight", weight, 1, x.cols()));
    QL_RETURN_IF_ERROR(require_f32("rms_norm", "weight", weight));
    const View xv = view_of(x), wv = view_of(weight), ov = view_of(out);
    const cl_int n = static_cast<cl_int>(x.cols());
    return run(rms_norm_, "rms_norm", {dim(x.rows()) * kNormLanes}, {kNormLanes},
               {arg(xv.mem), arg(xv.offset), arg(xv.ld), arg(wv.mem), arg(wv.offset), arg(eps),
                arg(ov.mem), arg(ov.offset), arg(ov.ld), arg(ov.dtype), arg(n)});
  }

  Status add_rms_norm(MatrixView residual, ConstMatrixView delta, ConstMatrixView weight, float eps,
                      MatrixView out) override {
    QL_RETURN_IF_ERROR(add(residual, delta));
    return rms_norm(residual, weight, eps, out);
  }

  Status head_rms_norm(MatrixView x, int64_t head_dim, ConstMatrixView weight, float eps) override {
    QL_RETURN_IF_ERROR(require_f32("head_rms_norm", "x", x));
    QL_RETURN_IF_ERROR(require_device("head_rms_norm", x, "x"));
    QL_RETURN_IF_ERROR(require_shape("head_rms_norm", "weight", weight, 1, head_dim));
    QL_RETURN_IF_ERROR(require_f32("head_rms_norm", "weight", weight));
    if (head_dim <= 0 || x.cols() % head_dim != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "opencl ops head_rms_norm: {} columns are not whole heads of {}", x.cols(),
                        head_dim);
    }
    const View xv = view_of(x), wv = view_of(weight);
    const cl_int d = static_cast<cl_int>(head_dim);
    return run(
        head_rms_norm_, "head_rms_norm", {dim(x.cols() / head_dim) * kNormLanes, dim(x.rows())},
        {kNormLanes, 1},
        {arg(xv.mem), arg(xv.offset), arg(xv.ld), arg(d), arg(wv.mem), arg(wv.offset), arg(eps)});
  }

  Status rope(MatrixView x, int64_t head_dim, ConstMatrixView positions,
              const RopeTable& table) override {
    QL_RETURN_IF_ERROR(require_f32("rope", "x", x));
    QL_RETURN_IF_ERROR(require_device("rope", x, "x"));
    const int64_t half = head_dim / 2;
    if (head_dim <= 0 || half != table.half || x.cols() % head_dim != 0 ||
        positions.cols() != x.rows()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "opencl ops rope: x [{}, {}] with head_dim {} and {} positions does not "
                        "fit a table of {} frequencies",
                        x.rows(), x.cols(), head_dim, positions.cols(), table.half);
    }
    QL_RETURN_IF_ERROR(require_f32("rope", "the cos table", table.cos));
    QL_RETURN_IF_ERROR(require_f32("rope", "the sin table", table.sin));
    QL_RETURN_IF_ERROR(require_device("rope", table.cos, "the cos table"));
    QL_RETURN_IF_ERROR(require_device("rope", table.sin, "the sin table"));
    QL_ASSIGN_OR_RETURN(const Index index,
                        indices("rope", positions, table.positions, [&](int32_t p, int64_t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "position {} is outside the rotary table [0, {}) "
                                            "(--ctx)",
                                            p, table.positions);
                        }));
    const View xv = view_of(x), cv = view_of(table.cos), sv = view_of(table.sin);
    const cl_int d = static_cast<cl_int>(head_dim),
                 heads = static_cast<cl_int>(x.cols() / head_dim);
    const cl_int table_positions = static_cast<cl_int>(table.positions);
    const cl_int T = static_cast<cl_int>(x.rows());
    return run(rope_, "rope", {dim(half), dim(heads), dim(T)},
               {arg(xv.mem), arg(xv.offset), arg(xv.ld), arg(d), arg(heads), arg(index.mem),
                arg(index.offset), arg(cv.mem), arg(cv.offset), arg(cv.ld), arg(sv.mem),
                arg(sv.offset), arg(sv.ld), arg(table_positions), arg(T)});
  }

  Status store_kv(ConstMatrixView k, ConstMatrixView v, ConstMatrixView positions,
                  const KvCacheView& cache, int64_t layer) override {
    const int64_t width = cache.kv_heads * cache.head_dim;
    QL_RETURN_IF_ERROR(require_shape("store_kv", "k", k, positions.cols(), width));
    QL_RETURN_IF_ERROR(require_shape("store_kv", "v", v, positions.cols(), width));
    QL_RETURN_IF_ERROR(require_device("store_kv", k, "k"));
    QL_RETURN_IF_ERROR(require_device("store_kv", v, "v"));
    QL_RETURN_IF_ERROR(require_cache("store_kv", cache, layer, k.rows()));
    QL_ASSIGN_OR_RETURN(const Index index,
                        indices("store_kv", positions, cache.capacity, [&](int32_t p, int64_t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "position {} does not fit the KV cache of {} "
                                            "positions (--ctx)",
                                            p, cache.capacity);
                        }));
    const cl_int capacity = static_cast<cl_int>(cache.capacity), w = static_cast<cl_int>(width);
    const cl_int seq_rows = static_cast<cl_int>(cache.rows_per_sequence);
    const cl_int T = static_cast<cl_int>(k.rows());
    if (cache.fp8()) {
      // One work-item per (kv head, row): the head's codes and scale (src/model/kv_fp8.h).
      const cl_int kv_heads = static_cast<cl_int>(cache.kv_heads),
                   hd = static_cast<cl_int>(cache.head_dim);
      for (const auto& [src, dst, scales] :
           {std::tuple<ConstMatrixView, MatrixView, MatrixView>{k, cache.layer_k(layer),
                                                                cache.layer_k_scale(layer)},
            std::tuple<ConstMatrixView, MatrixView, MatrixView>{v, cache.layer_v(layer),
                                                                cache.layer_v_scale(layer)}}) {
        const View s = view_of(src), d = view_of(dst), sc = view_of(scales);
        QL_RETURN_IF_ERROR(run(
            store_kv_fp8_, "store_kv", {dim(kv_heads), dim(T)},
            {arg(s.mem), arg(s.offset), arg(s.ld), arg(s.dtype), arg(index.mem), arg(index.offset),
             arg(d.mem), arg(d.offset), arg(d.ld), arg(sc.mem), arg(sc.offset), arg(sc.ld),
             arg(capacity), arg(kv_heads), arg(hd), arg(T), arg(seq_rows)}));
      }
      return Status::ok_status();
    }
    for (const auto& [src, dst] :
         {std::pair<ConstMatrixView, MatrixView>{k, cache.layer_k(layer)},
          std::pair<ConstMatrixView, MatrixView>{v, cache.layer_v(layer)}}) {
      const View s = view_of(src), d = view_of(dst);
      QL_RETURN_IF_ERROR(run(store_rows_, "store_kv", {dim(width), dim(T)},
                             {arg(s.mem), arg(s.offset), arg(s.ld), arg(s.dtype), arg(index.mem),
                              arg(index.offset), arg(d.mem), arg(d.offset), arg(d.ld), arg(d.dtype),
                              arg(capacity), arg(w), arg(T), arg(seq_rows)}));
    }
    return Status::ok_status();
  }

  Status attention(ConstMatrixView q, ConstMatrixView positions, const KvCacheView& cache,
                   int64_t layer, const AttentionShape& shape, MatrixView out) override {
    const int64_t d = shape.head_dim;
    const int64_t T = q.rows();
    QL_RETURN_IF_ERROR(require_f32("attention", "q", q));
    QL_RETURN_IF_ERROR(require_shape("attention", "q", q, T, shape.heads * d));
    QL_RETURN_IF_ERROR(require_shape("attention", "out", out, T, shape.heads * d));
    QL_RETURN_IF_ERROR(require_device("attention", q, "q"));
    QL_RETURN_IF_ERROR(require_device("attention", out, "out"));
    QL_RETURN_IF_ERROR(require_float("attention", "out", out));
    if (d <= 0 || d > kMaxHeadDim || shape.kv_heads <= 0 || shape.heads % shape.kv_heads != 0 ||
        positions.cols() != T) {
      return make_error(ErrorCode::kInvalidArgument,
                        "opencl ops attention: heads {} / kv heads {} / head_dim {} (at most {}) / "
                        "{} positions for {} rows",
                        shape.heads, shape.kv_heads, d, kMaxHeadDim, positions.cols(), T);
    }
    QL_RETURN_IF_ERROR(require_cache("attention", cache, layer, T));
    QL_ASSIGN_OR_RETURN(const Index index,
                        indices("attention", positions, cache.capacity, [&](int32_t p, int64_t) {
                          return make_error(ErrorCode::kInvalidArgument,
                                            "position {} does not fit the KV cache of {} "
                                            "positions",
                                            p, cache.capacity);
                        }));
    const View qv = view_of(q), kv = view_of(cache.layer_k(layer)),
               vv = view_of(cache.layer_v(layer)), ov = view_of(out);
    // An FP8 cache's scales; other caches pass their own buffers there, never read.
    const View ks = cache.fp8() ? view_of(cache.layer_k_scale(layer)) : View{kv.mem, 0, 0, 0};
    const View vs = cache.fp8() ? view_of(cache.layer_v_scale(layer)) : View{vv.mem, 0, 0, 0};
    const cl_int capacity = static_cast<cl_int>(cache.capacity);
    const cl_int heads = static_cast<cl_int>(shape.heads),
                 kv_heads = static_cast<cl_int>(shape.kv_heads), hd = static_cast<cl_int>(d),
                 window = static_cast<cl_int>(shape.window), rows = static_cast<cl_int>(T),
                 seq_rows = static_cast<cl_int>(cache.rows_per_sequence);
    return run(attention_, "attention", {dim(heads), dim(rows)},
               {arg(qv.mem),    arg(qv.offset), arg(qv.ld),     arg(index.mem), arg(index.offset),
                arg(kv.mem),    arg(kv.offset), arg(kv.ld),     arg(kv.dtype),  arg(vv.mem),
                arg(vv.offset), arg(vv.ld),     arg(vv.dtype),  arg(capacity),  arg(heads),
                arg(kv_heads),  arg(hd),        arg(window),    arg(ov.mem),    arg(ov.offset),
                arg(ov.ld),     arg(ov.dtype),  arg(rows),      arg(seq_rows),  arg(ks.mem),
                arg(ks.offset), arg(vs.mem),    arg(vs.offset), arg(ks.ld)});
  }

  Status silu_mul(ConstMatrixView gate, ConstMatrixView up, MatrixView out) override {
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "gate", gate));
    QL_RETURN_IF_ERROR(require_f32("silu_mul", "up", up));
    const int64_t I = out.cols();
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "gate", gate, out.rows(), I));
    QL_RETURN_IF_ERROR(require_shape("silu_mul", "up", up, out.rows(), I));
    QL_RETURN_IF_ERROR(require_device("silu_mul", gate, "gate"));
    QL_RETURN_IF_ERROR(require_device("silu_mul", up, "up"));
    QL_RETURN_IF_ERROR(require_device("silu_mul", out, "out"));
    QL_RETURN_IF_ERROR(require_float("silu_mul", "out", out));
    const View gv = view_of(gate), uv = view_of(up), ov = view_of(out);
    const cl_int cols = static_cast<cl_int>(I), rows = static_cast<cl_int>(out.rows());
    return run(silu_mul_, "silu_mul", {dim(cols), dim(rows)},
               {arg(gv.mem), arg(gv.offset), arg(gv.ld), arg(uv.mem), arg(uv.offset), arg(uv.ld),
                arg(ov.mem), arg(ov.offset), arg(ov.ld), arg(ov.dtype), arg(cols), arg(rows)});
  }

  Status add(MatrixView dst, ConstMatrixView src) override {
    QL_RETURN_IF_ERROR(require_f32("add", "dst", dst));
    QL_RETURN_IF_ERROR(require_shape("add", "src", src, dst.rows(), dst.cols()));
    QL_RETURN_IF_ERROR(require_device("add", dst, "dst"));
    QL_RETURN_IF_ERROR(require_device("add", src, "src"));
    QL_RETURN_IF_ERROR(require_float("add", "src", src));
    const View d = view_of(dst), s = view_of(src);
    const cl_int cols = static_cast<cl_int>(dst.cols()), rows = static_cast<cl_int>(dst.rows());
    return run(add_, "add", {dim(cols), dim(rows)},
               {arg(d.mem), arg(d.offset), arg(d.ld), arg(s.mem), arg(s.offset), arg(s.ld),
                arg(s.dtype), arg(cols), arg(rows)});
  }

  Status copy(ConstMatrixView src, MatrixView dst) override {
    QL_RETURN_IF_ERROR(require_shape("copy", "src", src, dst.rows(), dst.cols()));
    QL_RETURN_IF_ERROR(require_device("copy", src, "src"));
    QL_RETURN_IF_ERROR(require_device("copy", dst, "dst"));
    if (!float_dtype(src.dtype()) || !float_dtype(dst.dtype())) {
      return make_error(ErrorCode::kInvalidArgument, "opencl ops copy: {} to {}",
                        dtype_name(src.dtype()), dtype_name(dst.dtype()));
    }
    const View s = view_of(src), d = view_of(dst);
    const cl_int cols = static_cast<cl_int>(dst.cols()), rows = static_cast<cl_int>(dst.rows());
    return run(copy_, "copy", {dim(cols), dim(rows)},
               {arg(s.mem), arg(s.offset), arg(s.ld), arg(s.dtype), arg(d.mem), arg(d.offset),
                arg(d.ld), arg(d.dtype), arg(cols), arg(rows)});
  }

  Status argmax(ConstMatrixView logits, MatrixView ids) override {
    QL_RETURN_IF_ERROR(ops_checks::require_argmax("opencl", logits, ids));
    QL_RETURN_IF_ERROR(require_device("argmax", logits, "logits"));
    QL_RETURN_IF_ERROR(require_device("argmax", ids, "ids"));
    const View lv = view_of(logits), iv = view_of(ids);
    const cl_int cols = static_cast<cl_int>(logits.cols());
    return run(argmax_, "argmax", {dim(logits.rows()) * kNormLanes}, {kNormLanes},
               {arg(lv.mem), arg(lv.offset), arg(lv.ld), arg(iv.mem), arg(iv.offset), arg(cols)});
  }

 private:
  // An i32 index view as the kernels take it.
  struct Index {
    cl_mem mem;
    cl_ulong offset;
  };

  static std::size_t dim(int64_t n) { return static_cast<std::size_t>(std::max<int64_t>(n, 0)); }

  Status run(const opencl::KernelHandle& kernel, std::string_view what,
             std::initializer_list<std::size_t> global, std::initializer_list<opencl::Arg> args) {
    return opencl::launch(device_.queue(), kernel.get(), what, global, {0}, args);
  }
  Status run(const opencl::KernelHandle& kernel, std::string_view what,
             std::initializer_list<std::size_t> global, std::initializer_list<std::size_t> local,
             std::initializer_list<opencl::Arg> args) {
    return opencl::launch(device_.queue(), kernel.get(), what, global, local, args);
  }

  // Host indices are checked with `out_of_range(value, t)` and uploaded; device ones pass as
  // they are (the kernels guard them).
  template <class OutOfRange>
  Result<Index> indices(std::string_view op, ConstMatrixView v, int64_t limit,
                        OutOfRange&& out_of_range) {
    if (v.dtype() != DType::kI32 || v.rows() != 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "opencl ops {}: indices are {} [{}, {}]; need "
                        "i32 [1, T]",
                        op, dtype_name(v.dtype()), v.rows(), v.cols());
    }
    if (!v.location().host_accessible()) {
      QL_RETURN_IF_ERROR(require_device(op, v, "the indices"));
      return Index{opencl::mem_of(v.data()), static_cast<cl_ulong>(v.offset())};
    }
    const int32_t* values = v.row_as<int32_t>(0);
    for (int64_t t = 0; t < v.cols(); ++t) {
      if (values[t] < 0 || values[t] >= limit) return out_of_range(values[t], t);
    }
    const std::size_t bytes = static_cast<std::size_t>(std::max<int64_t>(v.cols(), 1)) * 4;
    if (!index_buffer_ || index_bytes_ < bytes) {
      QL_ASSIGN_OR_RETURN(index_buffer_,
                          device_.buffer(std::max<std::size_t>(bytes, 4096), "decoder op indices"));
      index_bytes_ = std::max<std::size_t>(bytes, 4096);
    }
    if (v.cols() > 0) {
      QL_RETURN_IF_ERROR(opencl::check(
          clEnqueueWriteBuffer(device_.queue(), index_buffer_.get(), CL_TRUE, 0,
                               static_cast<std::size_t>(v.cols()) * 4, values, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer", fmt::format("opencl ops {}: indices", op)));
    }
    return Index{index_buffer_.get(), 0};
  }

  Status require_device(std::string_view op, ConstMatrixView v, std::string_view what) const {
    return ops_checks::require_location("opencl", op, v, what, device_.location());
  }
  static Status require_shape(std::string_view op, std::string_view what, ConstMatrixView v,
                              int64_t rows, int64_t cols) {
    return ops_checks::require_shape("opencl", op, what, v, rows, cols);
  }
  static Status require_f32(std::string_view op, std::string_view what, ConstMatrixView v) {
    return ops_checks::require_f32("opencl", op, what, v);
  }
  static Status require_float(std::string_view op, std::string_view what, ConstMatrixView v) {
    return ops_checks::require_float("opencl", op, what, v);
  }
  Status require_cache(std::string_view op, const KvCacheView& cache, int64_t layer,
                       int64_t rows) const {
    QL_RETURN_IF_ERROR(ops_checks::require_cache("opencl", op, cache, layer, rows,
                                                 device_.location(), /*fp8=*/true));
    if (cache.fp8() && (cache.k_scale.ld() != cache.v_scale.ld() || cache.head_dim <= 0 ||
                        cache.head_dim > kMaxHeadDim)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "opencl ops {}: an FP8 cache needs key and value scales of one leading "
                        "dimension ({} and {}) and head_dim in [1, {}] ({})",
                        op, cache.k_scale.ld(), cache.v_scale.ld(), kMaxHeadDim, cache.head_dim);
    }
    return Status::ok_status();
  }

  opencl::Context& device_;
  opencl::KernelHandle store_kv_fp8_;
  opencl::KernelHandle embed_, rms_norm_, head_rms_norm_, rope_, store_rows_, attention_, silu_mul_,
      add_, copy_, argmax_;
  opencl::BufferHandle index_buffer_;
  std::size_t index_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<DecoderOps>> make_opencl_ops(DeviceContext& device) {
  QL_ASSIGN_OR_RETURN(opencl::Context * context, opencl::context_of(device));
  auto ops = std::make_unique<OpenClOps>(*context);
  QL_RETURN_IF_ERROR(ops->load());
  return std::unique_ptr<DecoderOps>(std::move(ops));
}

}  // namespace qlinear
