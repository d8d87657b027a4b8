// tokenizer.json "pre_tokenizer": ByteLevel (with and without its GPT-2 regex), Split (String or
// Regex pattern, every split behaviour, invert), Metaspace (prepend_scheme always/first/never,
// split), Digits and Sequence. A pre-tokenizer cuts pieces of normalized text into smaller
// pieces, each later tokenized by the model on its own.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/json_fields.h"

namespace qlinear::text {

struct Piece {
  std::string_view text;
  // The piece begins at offset 0 of the original input (Metaspace's prepend_scheme "first").
  bool at_origin = false;
};

// Owns the text of pieces a pre-tokenizer rewrote; pieces are views into it or into the input.
class PieceArena {
 public:
  std::string_view keep(std::string text) {
    owned_.push_back(std::move(text));
    return owned_.back();
  }
  void clear() { owned_.clear(); }

 private:
  std::deque<std::string> owned_;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pre-tokenized pieces (empty pieces are dropped).
  virtual Status apply(std::vector<Piece>& pieces, PieceArena& arena) const = 0;

  // When the last thing this pre-tokenizer does is ByteLevel's byte-to-character mapping, it
  // stops doing it and returns true: the model then reads the raw bytes as byte-level
  // characters itself, which is the same tokenization without building the mapped strings.
  virtual bool defer_byte_mapping() { return false; }

  // null -> no pre-tokenizer (nullptr).
  static Result<std::unique_ptr<PreTokenizer>> parse(const Json& value, std::string_view path);
};

}  // namespace qlinear::text
