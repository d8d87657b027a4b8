// Parses tokenizer.json with nlohmann's SAX interface: model.vocab and model.merges (hundreds of
// thousands of entries) go straight into flat lists, everything else into a JSON tree for the
// component parsers. Building them as nlohmann objects first cost 3-4x the load time (a
// std::map insert per vocabulary entry).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "text/json_fields.h"

namespace qlinear::text {

struct BpeLists {
  bool has_vocab = false;
  bool has_merges = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // in file order
  // A merge: ("a b", "") for the legacy string form, ("a", "b") for a pair.
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<bool> merge_is_pair;
  std::string error;  // first malformed entry, with its key path
};

struct TokenizerJson {
  Json tree;  // the file without model.vocab and model.merges
  BpeLists lists;
};

// `where` names the file in errors.
Result<TokenizerJson> parse_tokenizer_json(std::string_view text, std::string_view where);

}  // namespace qlinear::text
