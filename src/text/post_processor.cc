#include "text/post_processor.h"

#include <utility>

namespace qlinear::text {
namespace {

constexpr std::string_view kSupported = "TemplateProcessing, ByteLevel, Sequence";

Result<SpecialPiece> special_piece(const Json& special_tokens, std::string_view tokens_path,
                                   const std::string& name, std::string_view where) {
  const auto it = special_tokens.find(name);
  if (it == special_tokens.end()) {
    return make_error(ErrorCode::kCorrupt, "{} names \"{}\", which {} does not define", where, name,
                      tokens_path);
  }
  const std::string path = child_path(tokens_path, name);
  QL_RETURN_IF_ERROR(check_object(*it, path, {"id", "ids", "tokens"}));
  QL_ASSIGN_OR_RETURN(const Json* ids, get_array(*it, path, "ids"));
  QL_ASSIGN_OR_RETURN(const Json* tokens, get_array(*it, path, "tokens"));
  if (ids->size() != tokens->size()) {
    return make_error(ErrorCode::kCorrupt, "{}: {} ids but {} tokens", path, ids->size(),
                      tokens->size());
  }
  SpecialPiece piece;
  for (size_t i = 0; i < ids->size(); ++i) {
    const Json& id = (*ids)[i];
    const Json& token = (*tokens)[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX ||
        !token.is_string()) {
      return make_error(ErrorCode::kCorrupt, "{} entry {} must be an id and a token string", path,
                        i);
    }
    piece.ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    piece.tokens.push_back(token.get<std::string>());
  }
  return piece;
}

}  // namespace

PostProcessor PostProcessor::wrap(std::vector<SpecialPiece> prefix,
                                  std::vector<SpecialPiece> suffix) {
  PostProcessor p;
  p.steps_.push_back({std::move(prefix), std::move(suffix)});
  return p;
}

Result<PostProcessor> PostProcessor::parse(const Json& value, std::string_view path) {
  PostProcessor p;
  if (value.is_null()) return p;
  if (!value.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an object or null, got {}", path,
                      json_excerpt(value));
  }
  QL_ASSIGN_OR_RETURN(const std::string type, get_string(value, path, "type"));
  if (type == "ByteLevel") {
    QL_RETURN_IF_ERROR(
        check_object(value, path, {"type", "add_prefix_space", "trim_offsets", "use_regex"}));
    return p;  // trims offsets; ids are unchanged
  }
  if (type == "Sequence") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "processors"}));
    QL_ASSIGN_OR_RETURN(const Json* list, get_array(value, path, "processors"));
    for (size_t i = 0; i < list->size(); ++i) {
      QL_ASSIGN_OR_RETURN(PostProcessor step,
                          parse((*list)[i], index_path(child_path(path, "processors"), i)));
      for (Template& t : step.steps_) p.steps_.push_back(std::move(t));
    }
    return p;
  }
  if (type == "TemplateProcessing") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "single", "pair", "special_tokens"}));
    QL_ASSIGN_OR_RETURN(const Json* single, get_array(value, path, "single"));
    const auto specials = value.find("special_tokens");
    if (specials == value.end() || !specials->is_object()) {
      return make_error(ErrorCode::kCorrupt, "{} must be an object",
                        child_path(path, "special_tokens"));
    }
    const std::string specials_path = child_path(path, "special_tokens");
    Template t;
    bool seen_a = false;
    for (size_t i = 0; i < single->size(); ++i) {
      const std::string item = index_path(child_path(path, "single"), i);
      const Json& piece = (*single)[i];
      if (!piece.is_object() || piece.size() != 1) {
        return make_error(ErrorCode::kCorrupt,
                          "{} must be {{\"SpecialToken\": ...}} or "
                          "{{\"Sequence\": ...}}, got {}",
                          item, json_excerpt(piece));
      }
      const std::string kind = piece.begin().key();
      const Json& body = piece.begin().value();
      const std::string body_path = child_path(item, kind);
      if (kind == "Sequence") {
        QL_RETURN_IF_ERROR(check_object(body, body_path, {"id", "type_id"}));
        QL_ASSIGN_OR_RETURN(const std::string id, get_string(body, body_path, "id"));
        if (id != "A" || seen_a) {
          return make_error(ErrorCode::kUnsupported,
                            "{} \"{}\": a single-sequence template must hold $A exactly once",
                            child_path(body_path, "id"), id);
        }
        seen_a = true;
      } else if (kind == "SpecialToken") {
        QL_RETURN_IF_ERROR(check_object(body, body_path, {"id", "type_id"}));
        QL_ASSIGN_OR_RETURN(const std::string id, get_string(body, body_path, "id"));
        QL_ASSIGN_OR_RETURN(SpecialPiece sp, special_piece(*specials, specials_path, id,
                                                           child_path(body_path, "id")));
        (seen_a ? t.suffix : t.prefix).push_back(std::move(sp));
      } else {
        return unsupported_value(item, Json(kind), "SpecialToken, Sequence");
      }
    }
    if (!seen_a) {
      return make_error(ErrorCode::kCorrupt, "{} has no $A", child_path(path, "single"));
    }
    p.steps_.push_back(std::move(t));
    return p;
  }
  return unsupported_value(child_path(path, "type"), Json(type), kSupported);
}

void PostProcessor::apply(std::vector<int32_t>& ids, std::vector<std::string>* tokens,
                          bool add_special) const {
  if (!add_special) return;
  for (const Template& t : steps_) {
    std::vector<int32_t> out_ids;
    std::vector<std::string> out_tokens;
    for (const SpecialPiece& p : t.prefix) {
      out_ids.insert(out_ids.end(), p.ids.begin(), p.ids.end());
      if (tokens != nullptr) out_tokens.insert(out_tokens.end(), p.tokens.begin(), p.tokens.end());
    }
    out_ids.insert(out_ids.end(), ids.begin(), ids.end());
    if (tokens != nullptr) {
      out_tokens.insert(out_tokens.end(), std::make_move_iterator(tokens->begin()),
                        std::make_move_iterator(tokens->end()));
    }
    for (const SpecialPiece& p : t.suffix) {
      out_ids.insert(out_ids.end(), p.ids.begin(), p.ids.end());
      if (tokens != nullptr) out_tokens.insert(out_tokens.end(), p.tokens.begin(), p.tokens.end());
    }
    ids = std::move(out_ids);
    if (tokens != nullptr) *tokens = std::move(out_tokens);
  }
}

}  // namespace qlinear::text
