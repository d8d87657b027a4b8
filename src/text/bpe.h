// The BPE model of tokenizer.json: vocab, merges ("a b" strings or [a, b] pairs), unk_token
// with fuse_unk, byte_fallback (<0xNN> tokens), ignore_merges, continuing_subword_prefix and
// end_of_word_suffix. Each word is split into characters (or, for byte-level tokenizers, raw
// bytes standing for GPT-2's byte characters) and merged lowest rank first, leftmost first
// among equal ranks, exactly as Hugging Face's Word::merge_all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/hash_tables.h"
#include "text/json_fields.h"
#include "text/tokenizer_json.h"

namespace qlinear::text {

class WordCache;

class BpeModel {
 public:
  // `lists` (when non-null) holds the vocab and merges the SAX parser took out of `model`.
  static Result<BpeModel> parse(const Json& model, std::string_view path,
                                BpeLists* lists = nullptr);

  BpeModel();  // an empty vocabulary
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of `word` (non-empty). With `byte_input` the word's bytes are the
  // byte-level characters they stand for (see enable_byte_input). `tokens`, when non-null,
  // receives the vocabulary strings of the appended ids.
  void tokenize(std::string_view word, bool byte_input, std::vector<int32_t>& ids,
                std::vector<std::string>* tokens) const;

  // Prepares tokenize(..., byte_input = true). False when the model cannot read raw bytes
  // (a continuing_subword_prefix or end_of_word_suffix would change the byte characters).
  bool enable_byte_input();

  int32_t token_to_id(std::string_view token) const { return vocab_.find(token); }
  // nullptr when no vocabulary entry has the id.
  const std::string* id_to_token(int32_t id) const;
  // Number of vocabulary entries (Hugging Face's get_vocab_size).
  size_t vocab_entries() const { return vocab_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct Symbol;
  void merge_word(std::vector<Symbol>& symbols) const;
  void initial_symbols(std::string_view word, bool byte_input, std::vector<Symbol>& symbols) const;
  void add_symbol_for_piece(std::string_view piece, bool first, bool last,
                            std::vector<Symbol>& symbols, int32_t& unk_id, int32_t& unk_len) const;

  StringIdMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  PairMap merges_;
  std::optional<std::string> unk_token_;
  std::optional<std::string> continuing_subword_prefix_;
  std::optional<std::string> end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  int32_t byte_fallback_ids_[256];  // id of "<0xNN>" or -1
  // Byte input: id of each byte's byte-level character, and the vocabulary keyed by raw bytes.
  bool byte_input_ = false;
  int32_t byte_ids_[256];
  StringIdMap raw_vocab_;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace qlinear::text
