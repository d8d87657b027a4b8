// tokenizer.json "added_tokens": tokens matched in the raw text before the normalizer and the
// model ever see it. Ids and matching follow Hugging Face's AddedVocabulary: a token whose
// content is in the model vocab takes that id; matching is leftmost-longest over the tokens
// with normalized = false on the raw text, then over the normalized = true tokens (their
// contents normalized) on each normalized remainder; single_word, lstrip and rstrip filter and
// widen matches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "text/bpe.h"
#include "text/json_fields.h"
#include "text/normalizers.h"

namespace qlinear::text {

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A part of a text: an added token (id >= 0) or text between tokens (id == -1).
struct TextSegment {
  size_t begin;
  size_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  static Result<AddedVocabulary> build(const Json& list, std::string_view path,
                                       const BpeModel& model, const Normalizer* normalizer);

  // Splits `text` by the tokens with normalized == `normalized_set` (false: match on raw text).
  void split(std::string_view text, bool normalized_set, std::vector<TextSegment>& out) const;

  std::optional<int32_t> id_of(std::string_view content) const;
  // The added token with this id (the last one given the id, as in Hugging Face).
  const AddedToken* token(int32_t id) const;
  // Hugging Face tests token *strings* for specialness when decoding.
  bool is_special_content(std::string_view content) const;
  int32_t max_id() const { return max_id_; }
  size_t size() const { return by_content_.size(); }

 private:
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t token = -1;                                       // id of the token ending here
    };
    std::vector<Node> nodes = std::vector<Node>(1);
    bool first_byte[256] = {};
    void insert(std::string_view pattern, int32_t id);
    // Longest pattern starting at text[i]: its length and id, or length 0.
    size_t longest_at(std::string_view text, size_t i, int32_t* id) const;
  };

  std::unordered_map<std::string, int32_t> by_content_;
  std::unordered_map<int32_t, AddedToken> by_id_;
  std::unordered_set<std::string> special_contents_;
  Trie raw_trie_;
  Trie normalized_trie_;
  int32_t max_id_ = -1;
};

}  // namespace qlinear::text
