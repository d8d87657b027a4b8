#include "convert/packing.h"

#include <array>

namespace qlinear {

namespace {

constexpr std::array<int, 16> kIdentity = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
constexpr std::array<int, 8> kAwqOrder4 = {0, 2, 4, 6, 1, 3, 5, 7};
constexpr std::array<int, 8> kAwqReverse4 = {0, 4, 1, 5, 2, 6, 3, 7};
constexpr std::array<int, 4> kAwqOrder8 = {0, 2, 1, 3};
constexpr std::array<int, 4> kAwqReverse8 = {0, 2, 1, 3};

int per_word(int bits) { return 32 / bits; }

}  // namespace

bool pack_order_supported(PackOrder order, int bits) {
  if (order == PackOrder::kAwq) return bits == 4 || bits == 8;
  return bits == 2 || bits == 4 || bits == 8;
}

std::span<const int> pack_order(PackOrder order, int bits) {
  if (order == PackOrder::kAwq) {
    return bits == 4 ? std::span<const int>(kAwqOrder4) : std::span<const int>(kAwqOrder8);
  }
  return std::span<const int>(kIdentity).first(static_cast<std::size_t>(per_word(bits)));
}

std::span<const int> pack_order_inverse(PackOrder order, int bits) {
  if (order == PackOrder::kAwq) {
    return bits == 4 ? std::span<const int>(kAwqReverse4) : std::span<const int>(kAwqReverse8);
  }
  return std::span<const int>(kIdentity).first(static_cast<std::size_t>(per_word(bits)));
}

std::vector<uint8_t> unpack_columns(std::span<const uint32_t> words, int64_t rows,
                                    int64_t word_cols, int bits, PackOrder order) {
  const int pf = per_word(bits);
  const uint32_t mask = (1u << bits) - 1u;
  const std::span<const int> rev = pack_order_inverse(order, bits);
  const int64_t cols = word_cols * pf;
  std::vector<uint8_t> codes(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < word_cols; ++c) {
      const uint32_t word = words[static_cast<std::size_t>(r * word_cols + c)];
      for (int j = 0; j < pf; ++j) {
        codes[static_cast<std::size_t>(r * cols + c * pf + j)] =
            static_cast<uint8_t>((word >> (bits * rev[static_cast<std::size_t>(j)])) & mask);
      }
    }
  }
  return codes;
}

std::vector<uint32_t> pack_columns(std::span<const uint8_t> codes, int64_t rows, int64_t cols,
                                   int bits, PackOrder order) {
  const int pf = per_word(bits);
  const uint32_t mask = (1u << bits) - 1u;
  const std::span<const int> rev = pack_order_inverse(order, bits);
  const int64_t word_cols = cols / pf;
  std::vector<uint32_t> words(static_cast<std::size_t>(rows * word_cols), 0u);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < word_cols; ++c) {
      uint32_t word = 0;
      for (int j = 0; j < pf; ++j) {
        const uint32_t code = codes[static_cast<std::size_t>(r * cols + c * pf + j)] & mask;
        word |= code << (bits * rev[static_cast<std::size_t>(j)]);
      }
      words[static_cast<std::size_t>(r * word_cols + c)] = word;
    }
  }
  return words;
}

std::vector<uint8_t> unpack_rows(std::span<const uint32_t> words, int64_t word_rows, int64_t cols,
                                 int bits) {
  const int pf = per_word(bits);
  const uint32_t mask = (1u << bits) - 1u;
  std::vector<uint8_t> codes(static_cast<std::size_t>(word_rows * pf * cols));
  for (int64_t r = 0; r < word_rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t word = words[static_cast<std::size_t>(r * cols + c)];
      for (int i = 0; i < pf; ++i) {
        codes[static_cast<std::size_t>((r * pf + i) * cols + c)] =
            static_cast<uint8_t>((word >> (bits * i)) & mask);
      }
    }
  }
  return codes;
}

std::vector<uint32_t> pack_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols,
                                int bits) {
  const int pf = per_word(bits);
  const uint32_t mask = (1u << bits) - 1u;
  const int64_t word_rows = rows / pf;
  std::vector<uint32_t> words(static_cast<std::size_t>(word_rows * cols), 0u);
  for (int64_t r = 0; r < word_rows; ++r) {
    for (int i = 0; i < pf; ++i) {
      for (int64_t c = 0; c < cols; ++c) {
        const uint32_t code = codes[static_cast<std::size_t>((r * pf + i) * cols + c)] & mask;
        words[static_cast<std::size_t>(r * cols + c)] |= code << (bits * i);
      }
    }
  }
  return words;
}

}  // namespace qlinear
