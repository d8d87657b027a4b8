// JSON parsing shared by the io/ readers: positions in errors, optional duplicate-key detection
// (nlohmann keeps the last of two equal keys silently; safetensors forbids them), a nesting
// limit, and time linear in the input (nlohmann's callback parser rescans the parent object
// after every child object, quadratic in a safetensors header's tensor count).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/model_files.h"

namespace qlinear::io_internal {

enum class DuplicateKeys { kAllow, kReject };

// Deeper nesting than any config qlinear reads; bounds the recursion of dump() and of readers.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`. `where` names the source in errors (a path). With kReject, a key that appears
// twice in one object is a kCorrupt error naming the key path; the path's keys (outermost
// first) are stored in `*duplicate` when non-null so callers can phrase their own message. With
// kAllow the last value wins (as Python's json module does) in the first key's place.
Result<nlohmann::json> parse_json_text(std::string_view text, std::string_view where,
                                       DuplicateKeys duplicates,
                                       std::vector<std::string>* duplicate = nullptr);
// The same, keeping the order of object keys (GPTQ `dynamic` is ordered).
Result<nlohmann::ordered_json> parse_ordered_json_text(
    std::string_view text, std::string_view where, DuplicateKeys duplicates,
    std::vector<std::string>* duplicate = nullptr);

// A file the user named (`tokenize --text-file`, `chat-format --messages`): opened through the
// one policy (io/model_files.h: a regular file, links followed, never blocking) and read whole,
// at most `max_bytes`. NotFound / Io / RefusedFile errors name the path.
Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes = kMaxJsonFileBytes);

}  // namespace qlinear::io_internal
