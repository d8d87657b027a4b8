// Typed reads of quantization-config JSON with errors that name the source, the key, the value
// and the rule: `config.json:quantization_config: "bits" = "four": must be an integer`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::quant_internal {

using Json = nlohmann::ordered_json;

std::string lower_ascii(std::string_view text);
// Compact JSON text of `value` for messages, shortened past 80 characters.
std::string json_brief(const Json& value);

// "<where>: \"<key>\" = <value>: <rule>"
Status bad_value(ErrorCode code, std::string_view where, std::string_view key, const Json& value,
                 std::string_view rule);

// The value under the first of `keys` present and non-null in `object` (nullptr if none);
// `found` receives that key.
const Json* find_any(const Json& object, std::initializer_list<std::string_view> keys,
                     std::string* found = nullptr);

// Value-level conversions; `key` is only used in messages.
Result<int> as_int(const Json& value, std::string_view where, std::string_view key);
Result<bool> as_bool(const Json& value, std::string_view where, std::string_view key);
Result<std::string> as_string(const Json& value, std::string_view where, std::string_view key);
// A comma-separated string, a list of strings, or a list of lists of strings (flattened; list
// items are not split at commas, so regexes keep theirs);
// null gives an empty list. Entries are trimmed; empty entries dropped.
Result<std::vector<std::string>> as_name_list(const Json& value, std::string_view where,
                                              std::string_view key);

// Object-level reads of the first present, non-null key among `keys`; nullopt when absent.
Result<std::optional<int>> read_int(const Json& object,
                                    std::initializer_list<std::string_view> keys,
                                    std::string_view where);
Result<std::optional<bool>> read_bool(const Json& object,
                                      std::initializer_list<std::string_view> keys,
                                      std::string_view where);
Result<std::optional<std::string>> read_string(const Json& object,
                                               std::initializer_list<std::string_view> keys,
                                               std::string_view where);
Result<std::vector<std::string>> read_name_list(const Json& object,
                                                std::initializer_list<std::string_view> keys,
                                                std::string_view where);

// Integer weight bits qlinear reads: 2, 4 or 8. 3 gets its own reason (fractional pack factor).
Status check_int_bits(int bits, std::string_view where, std::string_view key);
// -1 (channelwise) or a positive group length.
Status check_group_size(int group_size, std::string_view where, std::string_view key);

}  // namespace qlinear::quant_internal
