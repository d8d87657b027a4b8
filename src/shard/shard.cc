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

// --- any tp: splits padded to whole groups / blocks ---------------------------------------------

namespace qlinear {
namespace {

int64_t floor_to(int64_t v, int64_t m) { return v / m * m; }
int64_t ceil_to(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Rows [k0, k1) of the canonical int form, padded outward to `align` (a multiple of the rows per
// packed word), with every code outside [keep0, keep1) set to its zero point.
IntWeights int_rows(const IntWeights& w, int64_t k0, int64_t k1, int64_t keep0, int64_t keep1) {
  const int pf = w.pack_factor();
  IntWeights o = w;
  o.K = k1 - k0;
  o.qweight = take_rows(w.qweight, w.N, {{k0 / pf, (k1 - k0) / pf}});
  const uint32_t mask = (1u << w.bits) - 1u;
  for (int64_t k = k0; k < k1; ++k) {
    if (k >= keep0 && k < keep1) continue;
    const int64_t group = w.group_of(k);
    const int64_t word_row = (k - k0) / pf;
    const int shift = w.bits * static_cast<int>(k % pf);
    for (int64_t n = 0; n < w.N; ++n) {
      uint32_t& word = o.qweight[at(word_row * w.N + n)];
      word = (word & ~(mask << shift)) | (w.zero(group, n) << shift);
    }
  }
  if (!w.g_idx.empty()) o.g_idx.assign(w.g_idx.begin() + k0, w.g_idx.begin() + k1);
  return o;
}

Result<ShardPlan> plan_rows(const Canonical& c, int tp, int rank) {
  const int64_t K = c.K();
  if (K % tp != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: row-parallel tp={} does not divide K={}: the ranks' activations would "
                      "not split evenly",
                      c.name, tp, K);
  }
  ShardPlan plan;
  plan.k_begin = rank * (K / tp);
  plan.k_end = plan.k_begin + K / tp;
  int64_t p0 = plan.k_begin;
  int64_t p1 = plan.k_end;
  Canonical out;
  out.name = c.name;
  out.shard_sizes = c.shard_sizes;
  std::string unit;
  if (const auto* w = std::get_if<IntWeights>(&c.weights)) {
    const bool grouped = w->g_idx.empty() && w->num_groups > 1;
    const int64_t align = grouped ? w->group_size : w->pack_factor();
    if (align % w->pack_factor() != 0) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: group_size={} is not a multiple of {} rows per packed word", c.name,
                        w->group_size, w->pack_factor());
    }
    p0 = floor_to(p0, align);
    p1 = std::min(K, ceil_to(p1, align));
    IntWeights o = int_rows(*w, p0, p1, plan.k_begin, plan.k_end);
    if (grouped) {
      o.num_groups = (p1 - p0) / w->group_size;
      o.scales = take_rows(w->scales, w->N, {{p0 / w->group_size, o.num_groups}});
      if (!w->zeros.empty())
        o.zeros = take_rows(w->zeros, w->N, {{p0 / w->group_size, o.num_groups}});
      unit = fmt::format("group_size={}", w->group_size);
    } else if (w->g_idx.empty()) {
      o.group_size = static_cast<int>(p1 - p0);  // channelwise: the shared scales, local K
      unit = fmt::format("{} rows per packed word", w->pack_factor());
    } else {
      unit = fmt::format("{} rows per packed word", w->pack_factor());
    }
    if (rank != 0) o.bias.clear();
    out.weights = std::move(o);
  } else if (const auto* f = std::get_if<Fp8Weights>(&c.weights)) {
    Fp8Weights o = *f;
    if (f->is_block()) {
      p0 = floor_to(p0, f->block_k);
      p1 = std::min(K, ceil_to(p1, f->block_k));
      const int64_t k_blocks = (K + f->block_k - 1) / f->block_k;
      const int64_t n_blocks = (f->N + f->block_n - 1) / f->block_n;
      const int64_t b0 = p0 / f->block_k;
      const int64_t b1 = (p1 + f->block_k - 1) / f->block_k;
      o.scale = take_columns(f->scale, n_blocks, k_blocks, {{b0, b1 - b0}});
      unit = fmt::format("block_k={}", f->block_k);
    }
    o.K = p1 - p0;
    o.qweight = take_columns(f->qweight, f->N, K, {{p0, p1 - p0}});
    for (int64_t n = 0; n < f->N; ++n) {
      for (int64_t k = p0; k < p1; ++k) {
        if (k < plan.k_begin || k >= plan.k_end) o.qweight[at(n * o.K + (k - p0))] = 0;
      }
    }
    if (rank != 0) o.bias.clear();
    out.weights = std::move(o);
  } else {
    QL_ASSIGN_OR_RETURN(out, shard_rows(c, tp, rank));
  }
  plan.pad_front = plan.k_begin - p0;
  plan.pad_back = p1 - plan.k_end;
  plan.windows = {{0, c.N()}};
  if (plan.pad_front + plan.pad_back > 0) {
    plan.padding = fmt::format(
        "rank {} of {} owns K rows {}..{} and takes rows {}..{} ({}: {} zero rows, +{:.1f}% of "
        "its weights)",
        rank, tp, plan.k_begin, plan.k_end - 1, p0, p1 - 1, unit, plan.pad_front + plan.pad_back,
        100.0 * static_cast<double>(plan.pad_front + plan.pad_back) /
            static_cast<double>(plan.k_end - plan.k_begin));
  }
  plan.weights = std::move(out);
  return plan;
}

Result<ShardPlan> plan_columns(const Canonical& c, int tp, int rank) {
  const auto* fp8 = std::get_if<Fp8Weights>(&c.weights);
  const bool blocks = fp8 != nullptr && fp8->is_block();
  ShardPlan plan;
  if (!blocks) {
    QL_ASSIGN_OR_RETURN(plan.weights, shard_columns(c, tp, rank));
    int64_t offset = 0;
    for (int64_t s : plan.weights.shard_sizes) {
      plan.windows.push_back({offset, s});
      offset += s;
    }
    plan.k_end = c.K();
    return plan;
  }
  // FP8 blocks: each shard's rank slice widened to whole blocks; rows outside it get code 0.
  const int64_t bn = fp8->block_n;
  const int64_t K = fp8->K;
  const int64_t k_blocks = (K + fp8->block_k - 1) / fp8->block_k;
  Fp8Weights o = *fp8;
  o.qweight.clear();
  o.scale.clear();
  o.bias.clear();
  Canonical out;
  out.name = c.name;
  int64_t offset = 0;
  int64_t padded_rows = 0;
  int64_t local_total = 0;
  for (std::size_t i = 0; i < c.shard_sizes.size(); ++i) {
    const int64_t size = c.shard_sizes[i];
    if (size % tp != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: column-parallel tp={} cannot split fused shard {} of N={} evenly",
                        c.name, tp, i, size);
    }
    if (offset % bn != 0) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: fused shard {} starts at row {}, inside an FP8 block of {} rows",
                        c.name, i, offset, bn);
    }
    const int64_t local = size / tp;
    const int64_t a0 = rank * local;
    const int64_t a1 = a0 + local;
    const int64_t b0 = floor_to(a0, bn);
    const int64_t b1 = std::min(size, ceil_to(a1, bn));
    int64_t base = 0;  // the rank's rows of the shards before this one
    for (int64_t s : out.shard_sizes) base += s;
    plan.windows.push_back({base + (a0 - b0), local});
    for (int64_t n = offset + b0; n < offset + b1; ++n) {
      const bool keep = n >= offset + a0 && n < offset + a1;
      for (int64_t k = 0; k < K; ++k) {
        o.qweight.push_back(keep ? fp8->qweight[at(n * K + k)] : uint8_t{0});
      }
      o.bias.push_back(!fp8->bias.empty() && keep ? fp8->bias[at(n)] : 0.0f);
    }
    for (int64_t b = (offset + b0) / bn; b < (offset + b1 + bn - 1) / bn; ++b) {
      for (int64_t j = 0; j < k_blocks; ++j) o.scale.push_back(fp8->scale[at(b * k_blocks + j)]);
    }
    out.shard_sizes.push_back(b1 - b0);
    padded_rows += (b1 - b0) - local;
    local_total += local;
    offset += size;
  }
  o.N = 0;
  for (int64_t s : out.shard_sizes) o.N += s;
  if (fp8->bias.empty()) o.bias.clear();
  out.weights = std::move(o);
  plan.weights = std::move(out);
  plan.k_end = K;
  if (padded_rows > 0) {
    plan.padding = fmt::format(
        "rank {} of {} takes whole FP8 blocks of {} rows: {} zero output rows, +{:.1f}% of its "
        "weights",
        rank, tp, bn, padded_rows,
        100.0 * static_cast<double>(padded_rows) / static_cast<double>(local_total));
  }
  return plan;
}

}  // namespace

Result<ShardPlan> plan_shard(const Canonical& weights, ParallelKind kind, int tp, int rank) {
  if (tp < 1 || rank < 0 || rank >= tp) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: rank {} of tp={} is invalid; tp must be >= 1 and 0 <= rank < tp",
                      weights.name, rank, tp);
  }
  Canonical whole = weights;
  if (whole.shard_sizes.empty()) whole.shard_sizes = {weights.N()};
  if (tp == 1) {
    ShardPlan plan;
    plan.k_end = whole.K();
    int64_t offset = 0;
    for (int64_t s : whole.shard_sizes) {
      plan.windows.push_back({offset, s});
      offset += s;
    }
    if (kind == ParallelKind::kRow) plan.windows = {{0, whole.N()}};
    plan.weights = std::move(whole);
    return plan;
  }
  return kind == ParallelKind::kRow ? plan_rows(whole, tp, rank) : plan_columns(whole, tp, rank);
}

}  // namespace qlinear
