// Packing of 2/4/8-bit codes into uint32 words (docs/reference/formats.md §0, §1.1).
// Sequential: code i of a word sits at bit offset bits*i. AWQ interleave: slot i of a word holds
// logical element ORDER[i] of its block ([0,2,4,6,1,3,5,7] for 4 bits, [0,2,1,3] for 8 bits);
// the same permutation is the ExLlama shuffle and Marlin's zero interleave, hence one helper.
// Callers check divisibility (rows or columns a multiple of 32/bits) before calling.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qlinear {

enum class PackOrder { kSequential, kAwq };

// True when `order` is defined for `bits` (sequential: 2, 4, 8; AWQ: 4, 8).
bool pack_order_supported(PackOrder order, int bits);
// slot -> logical element within a word (identity for sequential).
std::span<const int> pack_order(PackOrder order, int bits);
// logical element -> slot (REV = [0,4,1,5,2,6,3,7] for 4-bit AWQ).
std::span<const int> pack_order_inverse(PackOrder order, int bits);

// Words [rows, word_cols] packed along columns -> codes [rows, word_cols * 32/bits].
std::vector<uint8_t> unpack_columns(std::span<const uint32_t> words, int64_t rows,
                                    int64_t word_cols, int bits, PackOrder order);
// Codes [rows, cols] -> words [rows, cols / (32/bits)] packed along columns.
std::vector<uint32_t> pack_columns(std::span<const uint8_t> codes, int64_t rows, int64_t cols,
                                   int bits, PackOrder order);
// Words [word_rows, cols] packed sequentially along rows -> codes [word_rows * 32/bits, cols].
std::vector<uint8_t> unpack_rows(std::span<const uint32_t> words, int64_t word_rows, int64_t cols,
                                 int bits);
// Codes [rows, cols] -> words [rows / (32/bits), cols] packed sequentially along rows.
std::vector<uint32_t> pack_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols,
                                int bits);

}  // namespace qlinear
