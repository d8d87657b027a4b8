#include "quant/config_fields.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <limits>

namespace qlinear::quant_internal {
namespace {

constexpr std::size_t kBriefLimit = 80;

std::string trim(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

// Appends the names of `value` (string or list, nested one level) to `out`.
Status append_names(const Json& value, std::string_view where, std::string_view key, int depth,
                    std::vector<std::string>* out) {
  if (value.is_string() && depth > 0) {
    out->push_back(trim(value.get_ref<const std::string&>()));
    if (out->back().empty()) out->pop_back();
    return Status::ok_status();
  }
  if (value.is_string()) {  // top level: "a, b" is a comma-separated list
    const auto& text = value.get_ref<const std::string&>();
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string name = trim(std::string_view(text).substr(start, comma - start));
      if (!name.empty()) out->push_back(std::move(name));
      start = comma + 1;
    }
    return Status::ok_status();
  }
  if (value.is_array() && depth < 2) {
    for (const auto& item : value) {
      QL_RETURN_IF_ERROR(append_names(item, where, key, depth + 1, out));
    }
    return Status::ok_status();
  }
  return bad_value(ErrorCode::kInvalidArgument, where, key, value,
                   "must be a comma-separated string, a list of names or a list of lists of names");
}

}  // namespace

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string json_brief(const Json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (text.size() > kBriefLimit) text = text.substr(0, kBriefLimit - 3) + "...";
  return text;
}

Status bad_value(ErrorCode code, std::string_view where, std::string_view key, const Json& value,
                 std::string_view rule) {
  return make_error(code, "{}: \"{}\" = {}: {}", where, key, json_brief(value), rule);
}

const Json* find_any(const Json& object, std::initializer_list<std::string_view> keys,
                     std::string* found) {
  if (!object.is_object()) return nullptr;
  for (std::string_view key : keys) {
    auto it = object.find(std::string(key));
    if (it != object.end() && !it->is_null()) {
      if (found != nullptr) *found = std::string(key);
      return &*it;
    }
  }
  return nullptr;
}

Result<int> as_int(const Json& value, std::string_view where, std::string_view key) {
  if (value.is_number_integer()) {
    const auto number = value.get<int64_t>();
    if (number >= std::numeric_limits<int>::min() && number <= std::numeric_limits<int>::max()) {
      return static_cast<int>(number);
    }
    return bad_value(ErrorCode::kInvalidArgument, where, key, value, "integer out of range");
  }
  return bad_value(ErrorCode::kInvalidArgument, where, key, value, "must be an integer");
}

Result<bool> as_bool(const Json& value, std::string_view where, std::string_view key) {
  if (value.is_boolean()) return value.get<bool>();
  return bad_value(ErrorCode::kInvalidArgument, where, key, value, "must be true or false");
}

Result<std::string> as_string(const Json& value, std::string_view where, std::string_view key) {
  if (value.is_string()) return value.get<std::string>();
  return bad_value(ErrorCode::kInvalidArgument, where, key, value, "must be a string");
}

Result<std::vector<std::string>> as_name_list(const Json& value, std::string_view where,
                                              std::string_view key) {
  std::vector<std::string> names;
  if (value.is_null()) return names;
  QL_RETURN_IF_ERROR(append_names(value, where, key, 0, &names));
  return names;
}

Result<std::optional<int>> read_int(const Json& object,
                                    std::initializer_list<std::string_view> keys,
                                    std::string_view where) {
  std::string key;
  const Json* value = find_any(object, keys, &key);
  if (value == nullptr) return std::optional<int>();
  QL_ASSIGN_OR_RETURN(int number, as_int(*value, where, key));
  return std::optional<int>(number);
}

Result<std::optional<bool>> read_bool(const Json& object,
                                      std::initializer_list<std::string_view> keys,
                                      std::string_view where) {
  std::string key;
  const Json* value = find_any(object, keys, &key);
  if (value == nullptr) return std::optional<bool>();
  QL_ASSIGN_OR_RETURN(bool flag, as_bool(*value, where, key));
  return std::optional<bool>(flag);
}

Result<std::optional<std::string>> read_string(const Json& object,
                                               std::initializer_list<std::string_view> keys,
                                               std::string_view where) {
  std::string key;
  const Json* value = find_any(object, keys, &key);
  if (value == nullptr) return std::optional<std::string>();
  QL_ASSIGN_OR_RETURN(std::string text, as_string(*value, where, key));
  return std::optional<std::string>(std::move(text));
}

Result<std::vector<std::string>> read_name_list(const Json& object,
                                                std::initializer_list<std::string_view> keys,
                                                std::string_view where) {
  std::string key;
  const Json* value = find_any(object, keys, &key);
  if (value == nullptr) return std::vector<std::string>();
  return as_name_list(*value, where, key);
}

Status check_int_bits(int bits, std::string_view where, std::string_view key) {
  if (bits == 2 || bits == 4 || bits == 8) return Status::ok_status();
  if (bits == 3) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: \"{}\" = 3: 32/3 is not an integer pack factor; no kernel reads 3-bit "
                      "weights (supported: 2, 4, 8)",
                      where, key);
  }
  return make_error(ErrorCode::kUnsupported,
                    "{}: \"{}\" = {}: unsupported integer weight width (supported: 2, 4, 8)", where,
                    key, bits);
}

Status check_group_size(int group_size, std::string_view where, std::string_view key) {
  if (group_size == -1 || group_size > 0) return Status::ok_status();
  return make_error(ErrorCode::kInvalidArgument,
                    "{}: \"{}\" = {}: must be -1 (channelwise) or a positive group length", where,
                    key, group_size);
}

}  // namespace qlinear::quant_internal
