// PreparedLinear::run: the one place a call is validated before any kernel's do_run() sees it.
#include "kernels/kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace qlinear {
namespace {

Status view_error(const LinearProblem& problem, std::string_view what, std::string_view detail) {
  return make_error(ErrorCode::kInvalidArgument, "run of {}: {} {}", problem.to_string(), what,
                    detail);
}

// The view's shape, dtype, location and leading dimension against what the problem expects.
Status check_view(const LinearProblem& problem, std::string_view what, int64_t rows, int64_t cols,
                  DType dtype, Location location, int64_t ld, bool has_data,
                  std::string_view cols_name, int64_t want_cols, DType want_dtype,
                  Location want_location) {
  if (cols != want_cols) {
    return view_error(
        problem, what,
        fmt::format("has {} columns; the layer has {}={}", cols, cols_name, want_cols));
  }
  if (dtype != want_dtype) {
    return view_error(problem, what,
                      fmt::format("is {}; the layer was prepared for {}", dtype_name(dtype),
                                  dtype_name(want_dtype)));
  }
  if (!(location == want_location)) {
    return view_error(problem, what,
                      fmt::format("lives in {} memory; the layer runs on {}", location.to_string(),
                                  want_location.to_string()));
  }
  if (rows > 1 && ld < cols) {
    return view_error(problem, what,
                      fmt::format("has leading dimension {} < its {} columns", ld, cols));
  }
  if (rows > 0 && !has_data) return view_error(problem, what, "has no data");
  return Status::ok_status();
}

}  // namespace

Status PreparedLinear::run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const {
  QL_RETURN_IF_ERROR(check_call(x, y, ctx));
  if (x.rows() == 0) return Status::ok_status();
  return do_run(x, y, ctx);
}

Status PreparedLinear::check_call(ConstMatrixView x, MatrixView y, ExecContext& ctx) const {
  const LinearProblem& p = problem_;
  QL_RETURN_IF_ERROR(check_view(p, "x", x.rows(), x.cols(), x.dtype(), x.location(), x.ld(),
                                x.data() != nullptr, "K", p.K, p.act_dtype, location_));
  QL_RETURN_IF_ERROR(check_view(p, "y", y.rows(), y.cols(), y.dtype(), y.location(), y.ld(),
                                y.data() != nullptr, "N", p.N, p.out_dtype, location_));
  const int64_t M = x.rows();
  if (y.rows() != M) {
    return view_error(p, "y", fmt::format("has {} rows; x has {}", y.rows(), M));
  }
  if (M == 0) return Status::ok_status();
  if (M < p.m_min || M > p.m_max) {
    return view_error(
        p, "x", fmt::format("has {} rows; this prepared kernel covers {}", M, p.m_range_string()));
  }
  const std::size_t need = workspace_bytes(M);
  if (need > 0) {
    const Workspace& ws = ctx.workspace;
    if (ws.bytes < need || ws.data == nullptr) {
      return view_error(p, "the workspace",
                        fmt::format("holds {} bytes; a run of {} rows needs {} "
                                    "(workspace_bytes)",
                                    ws.bytes, M, need));
    }
    if (!(ws.location == location_)) {
      return view_error(p, "the workspace",
                        fmt::format("lives in {} memory; needs {}", ws.location.to_string(),
                                    location_.to_string()));
    }
    if (ws.location.host_accessible() && reinterpret_cast<uintptr_t>(ws.data) % 64 != 0) {
      return view_error(p, "the workspace", "is not 64-byte aligned");
    }
  }
  return Status::ok_status();
}

Status PreparedLinear::run(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                           const LinearFusion& fusion) const {
  const LinearProblem& p = problem_;
  const int64_t M = x.rows();
  if (fusion.empty()) return run(x, y, ctx);
  if (fusion.add_norm && fusion.swiglu) {
    return make_error(ErrorCode::kInvalidArgument,
                      "run of {}: the add-norm and SwiGLU epilogues cannot end one run",
                      p.to_string());
  }
  const FusionSupport can = fusion_support(M);
  const char* missing = fusion.add_norm && !can.add_norm ? "the residual add and norm after it"
                        : fusion.rms && !can.rms         ? "the RMS scaling before it"
                        : fusion.swiglu && !can.swiglu   ? "the SiLU-gated product after it"
                                                         : nullptr;
  if (missing != nullptr) {
    return make_error(ErrorCode::kUnsupported, "run of {}: this kernel cannot fuse {} at M={}",
                      p.to_string(), missing, M);
  }
  // A view of `rows` x `cols` of one of `dtypes`, in the layer's memory.
  auto check = [&](std::string_view what, const auto& v, int64_t rows, int64_t cols,
                   std::initializer_list<DType> dtypes) -> Status {
    if (v.rows() != rows || v.cols() != cols) {
      return view_error(
          p, what,
          fmt::format("is [{}, {}]; the fused run needs [{}, {}]", v.rows(), v.cols(), rows, cols));
    }
    if (std::find(dtypes.begin(), dtypes.end(), v.dtype()) == dtypes.end()) {
      return view_error(p, what, fmt::format("is {}", dtype_name(v.dtype())));
    }
    if (!(v.location() == location_)) {
      return view_error(p, what,
                        fmt::format("lives in {} memory; the layer runs on {}",
                                    v.location().to_string(), location_.to_string()));
    }
    if (rows > 1 && v.ld() < cols) {
      return view_error(p, what, fmt::format("has leading dimension {} < {}", v.ld(), cols));
    }
    if (rows > 0 && v.data() == nullptr) return view_error(p, what, "has no data");
    return Status::ok_status();
  };
  if (fusion.add_norm) {
    const AddNormEpilogue& e = *fusion.add_norm;
    QL_RETURN_IF_ERROR(check("the residual", e.residual, M, p.N, {DType::kF32}));
    QL_RETURN_IF_ERROR(check("the norm weight", e.weight, 1, p.N, {DType::kF32}));
    QL_RETURN_IF_ERROR(
        check("the norm input", e.pre, M, p.N, {DType::kBF16, DType::kF16, DType::kF32}));
    QL_RETURN_IF_ERROR(check("the partial sums", e.partials, M, (p.N + 15) / 16, {DType::kF64}));
  }
  if (fusion.rms) {
    const RmsPrologue& r = *fusion.rms;
    QL_RETURN_IF_ERROR(check("the partial sums", r.partials, M, r.partials.cols(), {DType::kF64}));
    if (r.cols <= 0 || r.partials.cols() < 1 || !(r.eps >= 0.0f)) {
      return view_error(p, "the RMS prologue",
                        fmt::format("has cols={}, {} partial sums per row, eps={}", r.cols,
                                    r.partials.cols(), r.eps));
    }
  }
  if (fusion.swiglu) {
    if (p.N % 2 != 0) return view_error(p, "the SwiGLU epilogue", "needs an even N");
    QL_RETURN_IF_ERROR(check("the SwiGLU output", fusion.swiglu->out, M, p.N / 2,
                             {DType::kBF16, DType::kF16, DType::kF32}));
  }
  QL_RETURN_IF_ERROR(check_call(x, y, ctx));
  if (M == 0) return Status::ok_status();
  return do_run_fused(x, y, ctx, fusion);
}

Status PreparedLinear::do_run_fused(ConstMatrixView x, MatrixView y, ExecContext& ctx,
                                    const LinearFusion& fusion) const {
  (void)x;
  (void)y;
  (void)ctx;
  (void)fusion;
  return make_error(ErrorCode::kInternal, "run of {}: fused work without a fused kernel",
                    problem_.to_string());
}

}  // namespace qlinear
