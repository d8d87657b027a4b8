// JSON parsing shared by the io/ readers: positions in errors, and optional duplicate-key
// detection (nlohmann keeps the last of two equal keys silently; safetensors forbids them).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::io_internal {

enum class DuplicateKeys { kAllow, kReject };

// Parses `text`. `where` names the source in errors (a path). With kReject, a key that appears
// twice in one object is a kCorrupt error naming the key path; the path's keys (outermost
// first) are stored in `*duplicate` when non-null so callers can phrase their own message.
Result<nlohmann::json> parse_json_text(std::string_view text, std::string_view where,
                                       DuplicateKeys duplicates,
                                       std::vector<std::string>* duplicate = nullptr);

// Reads a whole file into memory; NotFound / Io errors name the path.
Result<std::string> read_text_file(const std::string& path);

}  // namespace qlinear::io_internal
