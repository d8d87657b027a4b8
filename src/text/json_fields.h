// Reading tokenizer.json components with errors that name the JSON key and the offending value:
// `pre_tokenizer.pretokenizers[1].type "Punctuation" is not supported (supported: ...)`.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear::text {

using Json = nlohmann::json;

std::string child_path(std::string_view parent, std::string_view key);  // "a.b", or "b"
std::string index_path(std::string_view parent, size_t index);          // "a[3]"

// The value as JSON, shortened for messages.
std::string json_excerpt(const Json& value);

// `obj` must be an object; keys outside `known` are an error (an option we do not implement
// must never be ignored silently).
Status check_object(const Json& obj, std::string_view path,
                    std::initializer_list<std::string_view> known);

// Required / optional members with their JSON types checked.
Result<std::string> get_string(const Json& obj, std::string_view path, std::string_view key);
Result<std::optional<std::string>> get_optional_string(const Json& obj, std::string_view path,
                                                       std::string_view key);
Result<bool> get_bool(const Json& obj, std::string_view path, std::string_view key,
                      std::optional<bool> fallback = std::nullopt);
Result<int64_t> get_int(const Json& obj, std::string_view path, std::string_view key,
                        std::optional<int64_t> fallback = std::nullopt);
Result<const Json*> get_array(const Json& obj, std::string_view path, std::string_view key);

// `path "value" is not supported (supported: ...)`.
Status unsupported_value(std::string_view path, const Json& value, std::string_view supported);

}  // namespace qlinear::text
