#include "text/bpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <utility>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace qlinear::text {

struct BpeModel::Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  int32_t len;  // bytes of the word it covers; 0 once merged into its left neighbour
};

// Word -> ids memo shared by all threads of one model. Lookups and inserts only try the lock,
// so concurrent encodes never wait on each other (a busy cache is simply skipped).
class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;
  static constexpr size_t kMaxEntries = 1 << 17;

  bool find(std::string_view word, std::vector<int32_t>& ids) const {
    std::shared_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    const int32_t slot = index_.find(word);
    if (slot < 0) return false;
    const Entry& e = entries_[static_cast<size_t>(slot)];
    ids.insert(ids.end(), ids_.begin() + e.offset, ids_.begin() + e.offset + e.count);
    return true;
  }

  void insert(std::string_view word, const int32_t* ids, size_t count) {
    if (word.size() >= kMaxWordBytes) return;
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    if (entries_.size() >= kMaxEntries) {  // start over rather than stop learning
      index_ = StringIdMap();
      entries_.clear();
      ids_.clear();
    }
    index_.insert(word, static_cast<int32_t>(entries_.size()));
    entries_.push_back({static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(count)});
    ids_.insert(ids_.end(), ids, ids + count);
  }

 private:
  struct Entry {
    uint32_t offset;
    uint32_t count;
  };
  mutable std::shared_mutex mutex_;
  StringIdMap index_;
  std::vector<Entry> entries_;
  std::vector<int32_t> ids_;
};

BpeModel::BpeModel() : cache_(std::make_unique<WordCache>()) {
  std::fill(std::begin(byte_fallback_ids_), std::end(byte_fallback_ids_), -1);
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
}
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() ||
      !has_id_[static_cast<size_t>(id)]) {
    return nullptr;
  }
  return &id_to_token_[static_cast<size_t>(id)];
}

namespace {

// "a b" (exactly one space) -> (a, b).
Status split_legacy_merge(const std::string& line, std::string_view where,
                          std::pair<std::string, std::string>& out) {
  const size_t space = line.find(' ');
  if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
    return make_error(ErrorCode::kCorrupt, "{} \"{}\" must be two tokens separated by one space",
                      where, line);
  }
  out = {line.substr(0, space), line.substr(space + 1)};
  return Status::ok_status();
}

// Merges from the tree (when the SAX parser did not take them out).
Status merges_from_tree(const Json& list, std::string_view path, BpeLists& lists) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& m = list[i];
    if (m.is_string()) {
      lists.merges.emplace_back(m.get<std::string>(), std::string());
      lists.merge_is_pair.push_back(false);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      lists.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      lists.merge_is_pair.push_back(true);
    } else {
      return make_error(ErrorCode::kCorrupt, "{} must be \"a b\" or [\"a\", \"b\"], got {}",
                        index_path(path, i), json_excerpt(m));
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<BpeModel> BpeModel::parse(const Json& model, std::string_view path, BpeLists* given) {
  QL_RETURN_IF_ERROR(check_object(
      model, path,
      {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
       "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"}));
  BpeModel bpe;
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    const Json& d = model["dropout"];
    if (!d.is_number() || d.get<double>() != 0.0) {
      return make_error(ErrorCode::kUnsupported,
                        "{} {} is not supported (BPE dropout is random; only null or 0 are)",
                        child_path(path, "dropout"), json_excerpt(d));
    }
  }
  QL_ASSIGN_OR_RETURN(bpe.unk_token_, get_optional_string(model, path, "unk_token"));
  QL_ASSIGN_OR_RETURN(bpe.continuing_subword_prefix_,
                      get_optional_string(model, path, "continuing_subword_prefix"));
  QL_ASSIGN_OR_RETURN(bpe.end_of_word_suffix_,
                      get_optional_string(model, path, "end_of_word_suffix"));
  QL_ASSIGN_OR_RETURN(bpe.fuse_unk_, get_bool(model, path, "fuse_unk", false));
  QL_ASSIGN_OR_RETURN(bpe.byte_fallback_, get_bool(model, path, "byte_fallback", false));
  QL_ASSIGN_OR_RETURN(bpe.ignore_merges_, get_bool(model, path, "ignore_merges", false));

  BpeLists local;
  BpeLists& lists = given != nullptr ? *given : local;
  if (!lists.has_vocab) {
    const auto vocab_it = model.find("vocab");
    if (vocab_it == model.end() || !vocab_it->is_object()) {
      return make_error(ErrorCode::kCorrupt, "{} must be an object of token -> id",
                        child_path(path, "vocab"));
    }
    for (const auto& item : vocab_it->items()) {
      const Json& v = item.value();
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return make_error(ErrorCode::kCorrupt,
                          "{}.\"{}\" id {} must be a non-negative 32-bit "
                          "integer",
                          child_path(path, "vocab"), item.key(), json_excerpt(v));
      }
      lists.vocab.emplace_back(item.key(), v.get<int64_t>());
    }
  }
  if (!lists.has_merges) {
    QL_ASSIGN_OR_RETURN(const Json* merges_json, get_array(model, path, "merges"));
    QL_RETURN_IF_ERROR(merges_from_tree(*merges_json, child_path(path, "merges"), lists));
  }

  int64_t max_id = -1;
  for (const auto& [token, id] : lists.vocab) max_id = std::max(max_id, id);
  bpe.vocab_.reserve(lists.vocab.size());
  for (const auto& [token, id] : lists.vocab) bpe.vocab_.insert(token, static_cast<int32_t>(id));
  bpe.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  bpe.has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (auto& [token, id] : lists.vocab) {
    // A key given twice keeps its last id (as a JSON object read into a map does).
    if (bpe.vocab_.find(token) != static_cast<int32_t>(id)) continue;
    bpe.has_id_[static_cast<size_t>(id)] = true;
    bpe.id_to_token_[static_cast<size_t>(id)] = std::move(token);
  }

  const std::string merges_path = child_path(path, "merges");
  const size_t prefix_len =
      bpe.continuing_subword_prefix_ ? bpe.continuing_subword_prefix_->size() : 0;
  bpe.merges_.reserve(lists.merges.size());
  std::pair<std::string, std::string> legacy;
  std::string merged;
  uint32_t rank = 0;
  for (size_t i = 0; i < lists.merges.size(); ++i) {
    const std::pair<std::string, std::string>* m = &lists.merges[i];
    if (!lists.merge_is_pair[i]) {
      if (m->first.rfind("#version", 0) == 0) continue;  // legacy header line
      QL_RETURN_IF_ERROR(split_legacy_merge(m->first, index_path(merges_path, i), legacy));
      m = &legacy;
    }
    const auto& [a, b] = *m;
    const int32_t a_id = bpe.vocab_.find(a);
    const int32_t b_id = bpe.vocab_.find(b);
    merged.assign(a);
    if (b.size() >= prefix_len) merged.append(b, prefix_len);
    const int32_t merged_id = bpe.vocab_.find(merged);
    if (a_id < 0 || b_id < 0 || merged_id < 0) {
      const std::string& missing = a_id < 0 ? a : b_id < 0 ? b : merged;
      return make_error(ErrorCode::kCorrupt, "{} merge \"{} {}\": token \"{}\" is not in the vocab",
                        index_path(merges_path, i), a, b, missing);
    }
    bpe.merges_.insert(a_id, b_id, rank++, merged_id);
  }
  lists = BpeLists();  // the lists are large; free them now
  if (bpe.byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      bpe.byte_fallback_ids_[b] = bpe.vocab_.find(fmt::format("<0x{:02X}>", b));
    }
  }
  if (bpe.unk_token_ && bpe.vocab_.find(*bpe.unk_token_) < 0) {
    // Hugging Face fails on the first word that needs it; a load-time error is clearer.
    return make_error(ErrorCode::kCorrupt, "{} \"{}\" is not in the vocab",
                      child_path(path, "unk_token"), *bpe.unk_token_);
  }
  return bpe;
}

bool BpeModel::enable_byte_input() {
  if ((continuing_subword_prefix_ && !continuing_subword_prefix_->empty()) ||
      (end_of_word_suffix_ && !end_of_word_suffix_->empty())) {
    return false;
  }
  for (int b = 0; b < 256; ++b) {
    byte_ids_[b] = vocab_.find(byte_level_char(static_cast<unsigned char>(b)));
  }
  if (ignore_merges_) {
    // Whole-word lookups need the vocabulary spelled in raw bytes; entries with characters
    // outside the byte alphabet can never equal a byte-level word and are left out.
    raw_vocab_.reserve(vocab_.size());
    for (size_t id = 0; id < id_to_token_.size(); ++id) {
      if (!has_id_[id]) continue;
      const std::string& token = id_to_token_[id];
      std::string raw;
      raw.reserve(token.size());
      size_t i = 0;
      bool ok = true;
      while (i < token.size() && ok) {
        const int b = byte_level_byte(next_code_point(token, i));
        ok = b >= 0;
        raw.push_back(static_cast<char>(b));
      }
      if (ok && vocab_.find(token) == static_cast<int32_t>(id)) {
        raw_vocab_.insert(raw, static_cast<int32_t>(id));
      }
    }
  }
  byte_input_ = true;
  return true;
}

// One character (with prefix/suffix decoration) of Hugging Face's merge_word loop.
void BpeModel::add_symbol_for_piece(std::string_view piece, bool first, bool last,
                                    std::vector<Symbol>& symbols, int32_t& unk_id,
                                    int32_t& unk_len) const {
  const auto byte_len = static_cast<int32_t>(piece.size());
  std::string decorated;
  std::string_view s = piece;
  if ((!first && continuing_subword_prefix_) || (last && end_of_word_suffix_)) {
    if (!first && continuing_subword_prefix_) decorated = *continuing_subword_prefix_;
    decorated.append(piece);
    if (last && end_of_word_suffix_) decorated += *end_of_word_suffix_;
    s = decorated;
  }
  const int32_t id = vocab_.find(s);
  if (id >= 0) {
    if (unk_id >= 0) {
      symbols.push_back({unk_id, -1, -1, unk_len});
      unk_id = -1;
    }
    symbols.push_back({id, -1, -1, byte_len});
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (const char c : s) all = all && byte_fallback_ids_[static_cast<unsigned char>(c)] >= 0;
    if (all) {
      // As in Hugging Face, a pending unknown is not flushed before byte tokens.
      for (const char c : s)
        symbols.push_back({byte_fallback_ids_[static_cast<unsigned char>(c)], -1, -1, 1});
      return;
    }
  }
  if (unk_token_) {
    const int32_t unk = vocab_.find(*unk_token_);
    if (unk_id >= 0 && fuse_unk_) {
      unk_len += byte_len;
    } else {
      if (unk_id >= 0) symbols.push_back({unk_id, -1, -1, unk_len});
      unk_id = unk;
      unk_len = byte_len;
    }
  }
  // No vocabulary entry, no byte fallback, no unk token: the character is dropped.
}

void BpeModel::initial_symbols(std::string_view word, bool byte_input,
                               std::vector<Symbol>& symbols) const {
  int32_t unk_id = -1;
  int32_t unk_len = 0;
  if (byte_input) {
    for (size_t i = 0; i < word.size(); ++i) {
      const int32_t id = byte_ids_[static_cast<unsigned char>(word[i])];
      if (id >= 0 && unk_id < 0) {
        symbols.push_back({id, -1, -1, 1});
        continue;
      }
      add_symbol_for_piece(byte_level_char(static_cast<unsigned char>(word[i])), i == 0,
                           i + 1 == word.size(), symbols, unk_id, unk_len);
    }
  } else {
    size_t i = 0;
    while (i < word.size()) {
      const size_t at = i;
      i += utf8_length_from_lead(static_cast<unsigned char>(word[i]));
      add_symbol_for_piece(word.substr(at, i - at), at == 0, i >= word.size(), symbols, unk_id,
                           unk_len);
    }
  }
  if (unk_id >= 0) symbols.push_back({unk_id, -1, -1, unk_len});
  for (size_t k = 0; k < symbols.size(); ++k) {
    symbols[k].prev = static_cast<int32_t>(k) - 1;
    symbols[k].next = k + 1 < symbols.size() ? static_cast<int32_t>(k + 1) : -1;
  }
}

void BpeModel::merge_word(std::vector<Symbol>& symbols) const {
  const size_t n = symbols.size();
  if (n < 2) return;
  constexpr uint32_t kNone = UINT32_MAX;
  if (n <= 64) {
    // Small words: keep the rank of each symbol's pair with its right neighbour and scan for the
    // lowest (leftmost on ties); only the two pairs next to a merge are looked up again.
    uint32_t rank[64];
    int32_t merged[64];
    const auto lookup = [&](int32_t p) {
      const int32_t q = symbols[static_cast<size_t>(p)].next;
      if (q < 0 || !merges_.find(symbols[static_cast<size_t>(p)].id,
                                 symbols[static_cast<size_t>(q)].id, &rank[p], &merged[p])) {
        rank[p] = kNone;
      }
    };
    for (size_t p = 0; p < n; ++p) lookup(static_cast<int32_t>(p));
    while (true) {
      uint32_t best = kNone;
      int32_t at = -1;
      for (int32_t p = 0; p >= 0; p = symbols[static_cast<size_t>(p)].next) {
        if (rank[p] < best) {
          best = rank[p];
          at = p;
        }
      }
      if (at < 0) break;
      Symbol& left = symbols[static_cast<size_t>(at)];
      Symbol& right = symbols[static_cast<size_t>(left.next)];
      left.id = merged[at];
      left.len += right.len;
      left.next = right.next;
      right.len = 0;
      if (left.next >= 0) symbols[static_cast<size_t>(left.next)].prev = at;
      lookup(at);
      if (left.prev >= 0) lookup(left.prev);
    }
  } else {
    // Long words: Hugging Face's priority queue of (rank, position), entries checked for
    // staleness when popped.
    struct Merge {
      uint32_t rank;
      int32_t pos;
      int32_t merged;
      bool operator>(const Merge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Merge, std::vector<Merge>, std::greater<Merge>> queue;
    const auto push_pair = [&](int32_t p) {
      const int32_t q = symbols[static_cast<size_t>(p)].next;
      uint32_t r;
      int32_t m;
      if (q >= 0 && merges_.find(symbols[static_cast<size_t>(p)].id,
                                 symbols[static_cast<size_t>(q)].id, &r, &m)) {
        queue.push({r, p, m});
      }
    };
    for (size_t p = 0; p + 1 < n; ++p) push_pair(static_cast<int32_t>(p));
    while (!queue.empty()) {
      const Merge top = queue.top();
      queue.pop();
      Symbol& left = symbols[static_cast<size_t>(top.pos)];
      if (left.len == 0 || left.next < 0) continue;
      Symbol& right = symbols[static_cast<size_t>(left.next)];
      uint32_t r;
      int32_t m;
      if (!merges_.find(left.id, right.id, &r, &m) || m != top.merged) continue;
      left.id = top.merged;
      left.len += right.len;
      left.next = right.next;
      right.len = 0;
      if (left.next >= 0) symbols[static_cast<size_t>(left.next)].prev = top.pos;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(top.pos);
    }
  }
}

void BpeModel::tokenize(std::string_view word, bool byte_input, std::vector<int32_t>& ids,
                        std::vector<std::string>* tokens) const {
  if (word.empty()) return;
  const size_t first = ids.size();
  const auto emit_tokens = [&] {
    if (tokens == nullptr) return;
    for (size_t k = first; k < ids.size(); ++k) tokens->push_back(id_to_token_[ids[k]]);
  };
  if (ignore_merges_) {
    const int32_t id = byte_input ? raw_vocab_.find(word) : vocab_.find(word);
    if (id >= 0) {
      ids.push_back(id);
      emit_tokens();
      return;
    }
  }
  if (cache_->find(word, ids)) {
    emit_tokens();
    return;
  }
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  initial_symbols(word, byte_input, symbols);
  merge_word(symbols);
  for (int32_t p = symbols.empty() ? -1 : 0; p >= 0; p = symbols[static_cast<size_t>(p)].next) {
    ids.push_back(symbols[static_cast<size_t>(p)].id);
  }
  cache_->insert(word, ids.data() + first, ids.size() - first);
  emit_tokens();
}

}  // namespace qlinear::text
