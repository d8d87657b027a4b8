// Open-addressing hash tables for the tokenizer's hot loops: string -> id (vocabularies) and
// id pair -> merge (BPE ranks). std::unordered_map costs a node allocation per entry and a
// pointer chase per lookup; these keep everything in flat arrays.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace qlinear::text {

inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    h = (h ^ k) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t k = 0;
  std::memcpy(&k, p, n);
  h = (h ^ k) * kMul;
  h ^= h >> 32;
  return h;
}

// string -> int32 id; keys are copied into the table.
class StringIdMap {
 public:
  void reserve(size_t n);
  // Inserts or overwrites.
  void insert(std::string_view key, int32_t id);
  int32_t find(std::string_view key) const;  // -1 when absent
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t hash_tag = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = -1;  // -1: empty
  };
  void grow();
  std::string chars_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// (left id, right id) -> (rank, merged id).
class PairMap {
 public:
  void reserve(size_t n);
  void insert(int32_t left, int32_t right, uint32_t rank, int32_t merged);  // overwrites
  // True and the merge when the pair merges.
  bool find(int32_t left, int32_t right, uint32_t* rank, int32_t* merged) const {
    if (slots_.empty()) return false;
    const uint64_t key = pack(left, right);
    size_t i = index(key);
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == kEmpty) return false;
      if (s.key == key) {
        *rank = s.rank;
        *merged = s.merged;
        return true;
      }
      i = (i + 1) & mask_;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged = 0;
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t index(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow();
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

inline int32_t StringIdMap::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_bytes(key);
  const auto tag = static_cast<uint32_t>(h >> 32);
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(h) & mask;
  while (true) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash_tag == tag && s.length == key.size() &&
        std::memcmp(chars_.data() + s.offset, key.data(), key.size()) == 0) {
      return s.id;
    }
    i = (i + 1) & mask;
  }
}

}  // namespace qlinear::text
