#include "io/shard_index.h"

#include "core/escape.h"
#include "io/json_text.h"
#include "io/model_files.h"

namespace qlinear {

Result<ShardIndex> parse_shard_index(std::string_view text, std::string_view where) {
  std::vector<std::string> duplicate;
  auto index =
      io_internal::parse_json_text(text, where, io_internal::DuplicateKeys::kReject, &duplicate);
  if (!index.ok()) {
    if (duplicate.size() == 2 && duplicate[0] == "weight_map") {
      return make_error(ErrorCode::kCorrupt, "{}: tensor \"{}\" listed twice in weight_map", where,
                        escape_for_terminal(duplicate[1]));
    }
    return index.status();
  }
  const auto map = index->is_object() ? index->find("weight_map") : index->end();
  if (!index->is_object() || map == index->end() || !map->is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: \"weight_map\" missing or not an object", where);
  }
  if (map->empty()) {
    return make_error(ErrorCode::kCorrupt,
                      "{}: \"weight_map\" is empty: the index names no tensor, so the model "
                      "would load with no weights",
                      where);
  }
  ShardIndex out;
  for (const auto& [tensor, shard] : map->items()) {
    if (needs_escape(tensor)) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: weight_map key \"{}\" contains control characters or invalid UTF-8",
                        where, escape_for_terminal(tensor));
    }
    if (!shard.is_string()) {
      return make_error(ErrorCode::kCorrupt,
                        "{}: weight_map[\"{}\"] is {}, expected a shard file name", where, tensor,
                        escape_for_terminal(shard.dump().substr(0, 80)));
    }
    const auto& shard_name = shard.get_ref<const std::string&>();
    QL_RETURN_IF_ERROR(
        check_relative_name(shard_name, fmt::format("{}: weight_map[\"{}\"]", where, tensor)));
    out.shard_of.emplace(tensor, shard_name);
    out.first_tensor.emplace(shard_name, tensor);
  }
  return out;
}

}  // namespace qlinear
