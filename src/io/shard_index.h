// model.safetensors.index.json: which shard file holds each tensor. Parsed from text alone (no
// files touched), so the rules are testable and fuzzable: a JSON object with a non-empty
// "weight_map" object of tensor name -> shard file name, each tensor listed once, each shard a
// relative name that stays inside the model folder (no absolute path, no ".."), and no name
// with control characters.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear {

inline constexpr const char* kShardIndexName = "model.safetensors.index.json";

struct ShardIndex {
  std::map<std::string, std::string> shard_of;      // tensor -> shard file
  std::map<std::string, std::string> first_tensor;  // shard file -> first tensor listed in it
};

// `where` names the index in errors (its path).
Result<ShardIndex> parse_shard_index(std::string_view text, std::string_view where);

}  // namespace qlinear
