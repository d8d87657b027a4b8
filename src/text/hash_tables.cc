#include "text/hash_tables.h"

#include <utility>

namespace qlinear::text {

void StringIdMap::reserve(size_t n) {
  size_t want = 16;
  while (want < n * 2) want <<= 1;
  if (want <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(want, Slot{});
  const size_t mask = want - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    const uint64_t h = hash_bytes(std::string_view(chars_.data() + s.offset, s.length));
    size_t i = static_cast<size_t>(h) & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void StringIdMap::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void StringIdMap::insert(std::string_view key, int32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t h = hash_bytes(key);
  const auto tag = static_cast<uint32_t>(h >> 32);
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(h) & mask;
  while (slots_[i].id >= 0) {
    Slot& s = slots_[i];
    if (s.hash_tag == tag && s.length == key.size() &&
        std::memcmp(chars_.data() + s.offset, key.data(), key.size()) == 0) {
      s.id = id;
      return;
    }
    i = (i + 1) & mask;
  }
  Slot& s = slots_[i];
  s.hash_tag = tag;
  s.offset = static_cast<uint32_t>(chars_.size());
  s.length = static_cast<uint32_t>(key.size());
  s.id = id;
  chars_.append(key);
  ++size_;
}

void PairMap::reserve(size_t n) {
  size_t want = 16;
  int bits = 4;
  while (want < n * 2) {
    want <<= 1;
    ++bits;
  }
  if (want <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(want, Slot{});
  mask_ = want - 1;
  shift_ = 64 - bits;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t i = index(s.key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void PairMap::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void PairMap::insert(int32_t left, int32_t right, uint32_t rank, int32_t merged) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  size_t i = index(key);
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) {
      slots_[i].rank = rank;
      slots_[i].merged = merged;
      return;
    }
    i = (i + 1) & mask_;
  }
  slots_[i] = Slot{key, rank, merged};
  ++size_;
}

}  // namespace qlinear::text
