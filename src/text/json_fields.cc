#include "text/json_fields.h"

#include <fmt/format.h>

namespace qlinear::text {

std::string child_path(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

std::string index_path(std::string_view parent, size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string json_excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

Status check_object(const Json& obj, std::string_view path,
                    std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an object, got {}", path, json_excerpt(obj));
  }
  for (const auto& item : obj.items()) {
    bool found = false;
    for (const std::string_view k : known) found = found || k == item.key();
    if (!found) {
      std::string list;
      for (const std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return make_error(ErrorCode::kUnsupported,
                        "{} \"{}\" is not an option qlinear implements (known: {})",
                        child_path(path, item.key()), item.key(), list);
    }
  }
  return Status::ok_status();
}

Result<std::string> get_string(const Json& obj, std::string_view path, std::string_view key) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, key));
  }
  if (!it->is_string()) {
    return make_error(ErrorCode::kCorrupt, "{} must be a string, got {}", child_path(path, key),
                      json_excerpt(*it));
  }
  return it->get<std::string>();
}

Result<std::optional<std::string>> get_optional_string(const Json& obj, std::string_view path,
                                                       std::string_view key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return make_error(ErrorCode::kCorrupt, "{} must be a string or null, got {}",
                      child_path(path, key), json_excerpt(*it));
  }
  return std::optional<std::string>(it->get<std::string>());
}

Result<bool> get_bool(const Json& obj, std::string_view path, std::string_view key,
                      std::optional<bool> fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || (it->is_null() && fallback)) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, key));
  }
  if (!it->is_boolean()) {
    return make_error(ErrorCode::kCorrupt, "{} must be true or false, got {}",
                      child_path(path, key), json_excerpt(*it));
  }
  return it->get<bool>();
}

Result<int64_t> get_int(const Json& obj, std::string_view path, std::string_view key,
                        std::optional<int64_t> fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || (it->is_null() && fallback)) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, key));
  }
  if (!it->is_number_integer()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an integer, got {}", child_path(path, key),
                      json_excerpt(*it));
  }
  return it->get<int64_t>();
}

Result<const Json*> get_array(const Json& obj, std::string_view path, std::string_view key) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, key));
  }
  if (!it->is_array()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an array, got {}", child_path(path, key),
                      json_excerpt(*it));
  }
  return &*it;
}

Status unsupported_value(std::string_view path, const Json& value, std::string_view supported) {
  return make_error(ErrorCode::kUnsupported, "{} {} is not supported (supported: {})", path,
                    json_excerpt(value), supported);
}

}  // namespace qlinear::text
