#include "shard/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

namespace qlinear {

namespace {

std::size_t at(int64_t i) { return static_cast<std::size_t>(i); }

// A column range [begin, begin + size) of the full N, one per fused shard.
struct Range {
  int64_t begin;
  int64_t size;
};

// Copies the columns `ranges` of a row-major [rows, cols] matrix.
template <class T>
std::vector<T> take_columns(const std::vector<T>& m, int64_t rows, int64_t cols,
                            const std::vector<Range>& ranges) {
  int64_t out_cols = 0;
  for (const Range& r : ranges) out_cols += r.size;
  std::vector<T> out;
  out.reserve(at(rows * out_cols));
  for (int64_t row = 0; row < rows; ++row) {
    for (const Range& r : ranges) {
      const auto first = m.begin() + row * cols + r.begin;
      out.insert(out.end(), first, first + r.size);
    }
  }
  return out;
}

// Copies the rows `ranges` of a row-major [rows, cols] matrix.
template <class T>
std::vector<T> take_rows(const std::vector<T>& m, int64_t cols, const std::vector<Range>& ranges) {
  std::vector<T> out;
  for (const Range& r : ranges) {
    const auto first = m.begin() + r.begin * cols;
    out.insert(out.end(), first, first + r.size * cols);
  }
  return out;
}

template <class T>
std::vector<T> take_range(const std::vector<T>& v, const std::vector<Range>& ranges) {
  return take_rows(v, 1, ranges);
}

// --- which tp sizes work ----------------------------------------------------------------------

// Row-parallel constraints on K_local.
bool row_split_works(const Canonical& c, int tp) {
  const int64_t k = c.K();
  if (k % tp != 0) return false;
  const int64_t k_local = k / tp;
  if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
    if (k_local % w->pack_factor() != 0) return false;
    const bool grouped = w->g_idx.empty() && w->num_groups > 1;
    return !grouped || k_local % w->group_size == 0;
  }
  if (const auto* w = std::get_if<Fp8Weights>(&c.weights)) {
    return !w->is_block() || k_local % w->block_k == 0;
  }
  return true;
}

bool column_split_works(const Canonical& c, int tp) {
  const auto* fp8 = std::get_if<Fp8Weights>(&c.weights);
  for (int64_t s : c.shard_sizes) {
    if (s % tp != 0) return false;
    if (fp8 && fp8->is_block() && (s / tp) % fp8->block_n != 0) return false;
  }
  return true;
}

int largest_working_tp(const Canonical& c, ParallelKind kind, int tp) {
  for (int t = tp - 1; t > 1; --t) {
    if (kind == ParallelKind::kRow ? row_split_works(c, t) : column_split_works(c, t)) return t;
  }
  return 1;
}

// --- column-parallel --------------------------------------------------------------------------

Result<Canonical> shard_columns(const Canonical& c, int tp, int rank) {
  const auto* fp8 = std::get_if<Fp8Weights>(&c.weights);
  std::vector<Range> ranges;
  Canonical out;
  out.name = c.name;
  int64_t offset = 0;
  for (std::size_t i = 0; i < c.shard_sizes.size(); ++i) {
    const int64_t s = c.shard_sizes[i];
    if (s % tp != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: column-parallel tp={} cannot split fused shard {} of N={} ({} % {} "
                        "= {}); tp={} works",
                        c.name, tp, i, s, s, tp, s % tp,
                        largest_working_tp(c, ParallelKind::kColumn, tp));
    }
    const int64_t local = s / tp;
    if (fp8 && fp8->is_block() && local % fp8->block_n != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: column-parallel tp={} gives fused shard {} (N={}) a local N={}, not "
                        "a multiple of block_n={}: an FP8 scale block would straddle two ranks; "
                        "tp={} works",
                        c.name, tp, i, s, local, fp8->block_n,
                        largest_working_tp(c, ParallelKind::kColumn, tp));
    }
    ranges.push_back({offset + rank * local, local});
    out.shard_sizes.push_back(local);
    offset += s;
  }
  if (offset != c.N()) {
    return make_error(ErrorCode::kInternal, "{}: shard_sizes add up to {} but N={}", c.name, offset,
                      c.N());
  }
  int64_t n_local = 0;
  for (const Range& r : ranges) n_local += r.size;

  if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
    IntWeights o = *w;
    o.N = n_local;
    o.qweight = take_columns(w->qweight, w->K / w->pack_factor(), w->N, ranges);
    o.scales = take_columns(w->scales, w->num_groups, w->N, ranges);
    if (!w->zeros.empty()) o.zeros = take_columns(w->zeros, w->num_groups, w->N, ranges);
    if (!w->bias.empty()) o.bias = take_range(w->bias, ranges);
    out.weights = std::move(o);
  } else if (fp8) {
    Fp8Weights o = *fp8;
    o.N = n_local;
    o.qweight = take_rows(fp8->qweight, fp8->K, ranges);
    if (fp8->is_block()) {
      const int64_t k_blocks = (fp8->K + fp8->block_k - 1) / fp8->block_k;
      std::vector<Range> block_rows;
      for (const Range& r : ranges) {
        block_rows.push_back({r.begin / fp8->block_n, r.size / fp8->block_n});
      }
      o.scale = take_rows(fp8->scale, k_blocks, block_rows);
    } else {
      o.scale = take_range(fp8->scale, ranges);
    }
    if (!fp8->bias.empty()) o.bias = take_range(fp8->bias, ranges);
    out.weights = std::move(o);
  } else {
    const auto& d = std::get<DenseWeights>(c.weights);
    DenseWeights o;
    o.K = d.K;
    o.N = n_local;
    o.dtype = d.dtype;
    o.data = take_rows(d.data, static_cast<int64_t>(dtype_size(d.dtype)) * d.K, ranges);
    if (!d.bias.empty()) o.bias = take_range(d.bias, ranges);
    out.weights = std::move(o);
  }
  return out;
}

// --- row-parallel -----------------------------------------------------------------------------

Status row_error(const Canonical& c, int tp, int64_t k_local, std::string_view rule) {
  return make_error(ErrorCode::kInvalidArgument,
                    "{}: row-parallel tp={} splits K={} into K_local={}, {}; tp={} works", c.name,
                    tp, c.K(), k_local, rule, largest_working_tp(c, ParallelKind::kRow, tp));
}

Result<Canonical> shard_rows(const Canonical& c, int tp, int rank) {
  const int64_t k = c.K();
  if (k % tp != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: row-parallel tp={} does not divide K={}; tp={} works", c.name, tp, k,
                      largest_working_tp(c, ParallelKind::kRow, tp));
  }
  const int64_t k_local = k / tp;
  const int64_t k0 = rank * k_local;
  Canonical out;
  out.name = c.name;
  out.shard_sizes = c.shard_sizes;

  if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
    const int pf = w->pack_factor();
    if (k_local % pf != 0) {
      return row_error(c, tp, k_local,
                       fmt::format("not a multiple of {} (32/bits): the packed words of qweight "
                                   "would straddle two ranks",
                                   pf));
    }
    IntWeights o = *w;
    o.K = k_local;
    o.qweight = take_rows(w->qweight, w->N, {{k0 / pf, k_local / pf}});
    if (!w->g_idx.empty()) {
      // Act-order: rows of any group may land on any rank, so every rank keeps the whole
      // scale / zero table and the global group ids of its rows (formats.md §5.5).
      o.g_idx.assign(w->g_idx.begin() + k0, w->g_idx.begin() + k0 + k_local);
    } else if (w->num_groups == 1) {
      // Channelwise: the [1, N] scales are shared by all ranks; the group is the local K.
      o.group_size = static_cast<int>(k_local);
    } else {
      if (k_local % w->group_size != 0) {
        return row_error(c, tp, k_local,
                         fmt::format("not a multiple of group_size={}: a group would straddle "
                                     "two ranks",
                                     w->group_size));
      }
      const int64_t g0 = k0 / w->group_size;
      const int64_t g_local = k_local / w->group_size;
      o.num_groups = g_local;
      o.scales = take_rows(w->scales, w->N, {{g0, g_local}});
      if (!w->zeros.empty()) o.zeros = take_rows(w->zeros, w->N, {{g0, g_local}});
    }
    if (rank != 0) o.bias.clear();
    out.weights = std::move(o);
  } else if (const auto* f = std::get_if<Fp8Weights>(&c.weights)) {
    if (f->is_block() && k_local % f->block_k != 0) {
      return row_error(c, tp, k_local,
                       fmt::format("not a multiple of block_k={}: an FP8 scale block would "
                                   "straddle two ranks",
                                   f->block_k));
    }
    Fp8Weights o = *f;
    o.K = k_local;
    o.qweight = take_columns(f->qweight, f->N, f->K, {{k0, k_local}});
    if (f->is_block()) {
      const int64_t k_blocks = (f->K + f->block_k - 1) / f->block_k;
      const int64_t n_blocks = (f->N + f->block_n - 1) / f->block_n;
      o.scale =
          take_columns(f->scale, n_blocks, k_blocks, {{k0 / f->block_k, k_local / f->block_k}});
    }  // per-row scales: N is whole, replicated as they are
    if (rank != 0) o.bias.clear();
    out.weights = std::move(o);
  } else {
    const auto& d = std::get<DenseWeights>(c.weights);
    DenseWeights o;
    o.K = k_local;
    o.N = d.N;
    o.dtype = d.dtype;
    const auto es = static_cast<int64_t>(dtype_size(d.dtype));
    o.data = take_columns(d.data, d.N, d.K * es, {{k0 * es, k_local * es}});
    if (rank == 0) o.bias = d.bias;
    out.weights = std::move(o);
  }
  return out;
}

}  // namespace

std::string_view parallel_kind_name(ParallelKind kind) {
  return kind == ParallelKind::kRow ? "row" : "column";
}

ParallelKind parallel_kind_for(std::string_view layer_name) {
  const std::size_t dot = layer_name.rfind('.');
  const std::string_view last =
      dot == std::string_view::npos ? layer_name : layer_name.substr(dot + 1);
  constexpr std::array<std::string_view, 3> kRowNames = {"o_proj", "down_proj", "out_proj"};
  for (std::string_view row : kRowNames) {
    if (last == row) return ParallelKind::kRow;
  }
  return ParallelKind::kColumn;
}

Result<Canonical> shard_canonical(const Canonical& weights, ParallelKind kind, int tp, int rank) {
  if (tp < 1 || rank < 0 || rank >= tp) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: rank {} of tp={} is invalid; tp must be >= 1 and 0 <= rank < tp",
                      weights.name, rank, tp);
  }
  if (tp == 1) return weights;
  if (weights.shard_sizes.empty()) {  // an unfused layer built without its sizes
    Canonical whole = weights;
    whole.shard_sizes = {weights.N()};
    return shard_canonical(whole, kind, tp, rank);
  }
  return kind == ParallelKind::kRow ? shard_rows(weights, tp, rank)
                                    : shard_columns(weights, tp, rank);
}

}  // namespace qlinear
