// PreparedLinear::run: the one place a call is validated before any kernel's do_run() sees it.
#include "kernels/kernel.h"

#include <fmt/format.h>

#include <cstdint>

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
  return do_run(x, y, ctx);
}

}  // namespace qlinear
