#include "text/tokenizer.h"

#include <new>
#include <utility>

#include "io/json_text.h"
#include "io/model_files.h"
#include "text/json_fields.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace qlinear::text {
namespace {

// tokenizer_config.json writes tokens as strings or as {"content": ..., "__type": "AddedToken"}.
Result<std::optional<std::string>> config_token(const Json& config, std::string_view key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return std::optional<std::string>((*it)["content"].get<std::string>());
  }
  return make_error(ErrorCode::kCorrupt, "{} must be a string or an AddedToken object, got {}", key,
                    json_excerpt(*it));
}

Result<TokenizerConfig> parse_config(const Json& config) {
  TokenizerConfig c;
  if (config.is_null()) return c;
  if (!config.is_object()) {
    return make_error(ErrorCode::kCorrupt, "the top level must be an object, got {}",
                      json_excerpt(config));
  }
  QL_ASSIGN_OR_RETURN(c.bos_token, config_token(config, "bos_token"));
  QL_ASSIGN_OR_RETURN(c.eos_token, config_token(config, "eos_token"));
  QL_ASSIGN_OR_RETURN(c.unk_token, config_token(config, "unk_token"));
  QL_ASSIGN_OR_RETURN(c.pad_token, config_token(config, "pad_token"));
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      return make_error(ErrorCode::kCorrupt, "{} must be true or false, got {}", key,
                        json_excerpt(*it));
    }
    (std::string_view(key) == "add_bos_token" ? c.add_bos_token : c.add_eos_token) =
        it->get<bool>();
  }
  if (const auto it = config.find("additional_special_tokens");
      it != config.end() && it->is_array()) {
    for (const Json& t : *it) {
      if (t.is_string()) {
        c.additional_special_tokens.push_back(t.get<std::string>());
      } else if (t.is_object() && t.contains("content") && t["content"].is_string()) {
        c.additional_special_tokens.push_back(t["content"].get<std::string>());
      }
    }
  }
  if (const auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
    if (it->is_string()) {
      c.chat_templates.push_back({"default", it->get<std::string>()});
    } else if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const Json& t = (*it)[i];
        const std::string path = index_path("chat_template", i);
        if (!t.is_object()) {
          return make_error(ErrorCode::kCorrupt, "{} must be {{\"name\", \"template\"}}", path);
        }
        QL_ASSIGN_OR_RETURN(std::string name, get_string(t, path, "name"));
        QL_ASSIGN_OR_RETURN(std::string source, get_string(t, path, "template"));
        c.chat_templates.push_back({std::move(name), std::move(source)});
      }
    } else {
      return make_error(ErrorCode::kCorrupt,
                        "chat_template must be a string or a list of named templates, got {}",
                        json_excerpt(*it));
    }
  }
  return c;
}

// transformers 5 (TokenizersBackend): when tokenizer_config.json sets add_bos_token or
// add_eos_token, the post-processor becomes "[bos] $A [eos]" with each token present when its
// flag is true and the token is set.
Status apply_bos_eos_rule(TokenizerImpl& impl) {
  const TokenizerConfig& c = impl.config;
  if (!c.add_bos_token && !c.add_eos_token) return Status::ok_status();
  const auto piece = [&](const std::optional<std::string>& token, const char* key,
                         std::vector<SpecialPiece>& out) -> Status {
    if (!token) return Status::ok_status();
    const std::optional<int32_t> added = impl.added.id_of(*token);
    const int32_t id = added ? *added : impl.model.token_to_id(*token);
    if (id < 0) {
      return make_error(ErrorCode::kMisconfigured,
                        "tokenizer_config.json: {} \"{}\" is not in the vocabulary", key, *token);
    }
    out.push_back({{id}, {*token}});
    return Status::ok_status();
  };
  std::vector<SpecialPiece> prefix;
  std::vector<SpecialPiece> suffix;
  if (c.add_bos_token.value_or(false)) QL_RETURN_IF_ERROR(piece(c.bos_token, "bos_token", prefix));
  if (c.add_eos_token.value_or(false)) QL_RETURN_IF_ERROR(piece(c.eos_token, "eos_token", suffix));
  impl.post = PostProcessor::wrap(std::move(prefix), std::move(suffix));
  return Status::ok_status();
}

Result<std::shared_ptr<TokenizerImpl>> build(const Json& tj, BpeLists& lists,
                                             TokenizerConfig config) {
  auto impl = std::make_shared<TokenizerImpl>();
  QL_RETURN_IF_ERROR(check_object(tj, "",
                                  {"version", "truncation", "padding", "added_tokens", "normalizer",
                                   "pre_tokenizer", "post_processor", "decoder", "model"}));
  if (tj.contains("version") && tj["version"] != "1.0") {
    return unsupported_value("version", tj["version"], "\"1.0\"");
  }
  for (const char* key : {"truncation", "padding"}) {
    if (tj.contains(key) && !tj[key].is_null()) {
      return make_error(ErrorCode::kUnsupported,
                        "{} {} is not supported (qlinear encodes whole texts; only null is)", key,
                        json_excerpt(tj[key]));
    }
  }
  const Json kNull;
  const auto member = [&](const char* key) -> const Json& {
    const auto it = tj.find(key);
    return it == tj.end() ? kNull : *it;
  };
  const Json& model = member("model");
  if (!model.is_object()) {
    return make_error(ErrorCode::kCorrupt, "model must be an object, got {}", json_excerpt(model));
  }
  QL_ASSIGN_OR_RETURN(const std::string model_type, get_string(model, "model", "type"));
  if (model_type != "BPE") return unsupported_value("model.type", Json(model_type), "BPE");
  QL_ASSIGN_OR_RETURN(impl->model, BpeModel::parse(model, "model", &lists));
  QL_ASSIGN_OR_RETURN(impl->normalizer, Normalizer::parse(member("normalizer"), "normalizer"));
  QL_ASSIGN_OR_RETURN(impl->pre_tokenizer,
                      PreTokenizer::parse(member("pre_tokenizer"), "pre_tokenizer"));
  QL_ASSIGN_OR_RETURN(impl->post, PostProcessor::parse(member("post_processor"), "post_processor"));
  QL_ASSIGN_OR_RETURN(impl->decoder, DecoderSpec::parse(member("decoder"), "decoder"));
  QL_ASSIGN_OR_RETURN(impl->added, AddedVocabulary::build(member("added_tokens"), "added_tokens",
                                                          impl->model, impl->normalizer.get()));
  // Byte-level tokenizers: let the model read raw bytes instead of mapped strings.
  if (impl->pre_tokenizer != nullptr && impl->model.enable_byte_input()) {
    impl->byte_input = impl->pre_tokenizer->defer_byte_mapping();
  }
  impl->config = std::move(config);
  QL_RETURN_IF_ERROR(apply_bos_eos_rule(*impl));
  for (const NamedTemplate& t : impl->config.chat_templates) {
    const std::string name =
        t.name == "default" ? std::string("chat_template") : "chat_template \"" + t.name + "\"";
    QL_ASSIGN_OR_RETURN(ChatTemplate parsed, ChatTemplate::parse(t.source, name));
    impl->templates.push_back(std::move(parsed));
  }
  return impl;
}

}  // namespace

const std::string* TokenizerImpl::token_of(int32_t id) const {
  if (const AddedToken* t = added.token(id)) return &t->content;
  return model.id_to_token(id);
}

Status TokenizerImpl::encode(std::string_view input, bool add_special, std::vector<int32_t>& ids,
                             std::vector<std::string>* tokens) const {
  std::string repaired;
  std::string_view text = input;
  if (!is_valid_utf8(input)) {
    repaired = to_valid_utf8(input);
    text = repaired;
  }
  std::vector<TextSegment> outer;
  std::vector<TextSegment> inner;
  std::vector<Piece> pieces;
  PieceArena arena;
  added.split(text, false, outer);
  if (outer.empty() && !text.empty()) outer.push_back({0, text.size(), -1});
  for (const TextSegment& seg : outer) {
    const std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      if (tokens != nullptr) tokens->emplace_back(part);
      continue;
    }
    if (part.empty()) continue;
    std::string normalized_storage;
    std::string_view normalized = part;
    if (normalizer != nullptr) {
      QL_ASSIGN_OR_RETURN(normalized_storage, normalizer->normalize(part));
      normalized = normalized_storage;
    }
    inner.clear();
    added.split(normalized, true, inner);
    for (const TextSegment& sub : inner) {
      const std::string_view piece = normalized.substr(sub.begin, sub.end - sub.begin);
      if (sub.id >= 0) {
        ids.push_back(sub.id);
        if (tokens != nullptr) tokens->emplace_back(piece);
        continue;
      }
      if (piece.empty()) continue;
      pieces.clear();
      pieces.push_back({piece, seg.begin == 0 && sub.begin == 0});
      if (pre_tokenizer != nullptr) QL_RETURN_IF_ERROR(pre_tokenizer->apply(pieces, arena));
      for (const Piece& p : pieces) model.tokenize(p.text, byte_input, ids, tokens);
      arena.clear();
    }
  }
  post.apply(ids, tokens, add_special);
  return Status::ok_status();
}

// ---- StreamDecoder ----

struct StreamDecoder::State {
  std::shared_ptr<const TokenizerImpl> impl;
  bool skip_special;
  DecodeChain chain;
};

StreamDecoder::StreamDecoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
StreamDecoder::StreamDecoder(const StreamDecoder& other)
    : state_(std::make_unique<State>(*other.state_)) {}
StreamDecoder& StreamDecoder::operator=(const StreamDecoder& other) {
  if (this != &other) state_ = std::make_unique<State>(*other.state_);
  return *this;
}
StreamDecoder::StreamDecoder(StreamDecoder&&) noexcept = default;
StreamDecoder& StreamDecoder::operator=(StreamDecoder&&) noexcept = default;
StreamDecoder::~StreamDecoder() = default;

std::string StreamDecoder::push(int32_t id) {
  const std::string* token = state_->impl->token_of(id);
  if (token == nullptr) return {};
  if (state_->skip_special && state_->impl->added.is_special_content(*token)) return {};
  state_->chain.push_token(*token);
  return state_->chain.take();
}

std::string StreamDecoder::finish() {
  state_->chain.finish();
  return state_->chain.take();
}

// ---- Tokenizer ----

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}

Result<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json,
                                       std::string_view config_json, std::string_view where) {
  try {
    QL_ASSIGN_OR_RETURN(TokenizerJson parsed_json, parse_tokenizer_json(tokenizer_json, where));
    TokenizerConfig config;
    if (!config_json.empty()) {
      QL_ASSIGN_OR_RETURN(Json cj,
                          io_internal::parse_json_text(config_json, "tokenizer_config.json",
                                                       io_internal::DuplicateKeys::kAllow));
      Result<TokenizerConfig> parsed = parse_config(cj);
      if (!parsed.ok()) return parsed.status().with_context("tokenizer_config.json");
      config = std::move(parsed).value();
    }
    Result<std::shared_ptr<TokenizerImpl>> impl =
        build(parsed_json.tree, parsed_json.lists, std::move(config));
    if (!impl.ok()) {
      // Config and template errors already name their file.
      const std::string& m = impl.status().message();
      if (m.starts_with("tokenizer_config.json") || m.starts_with("chat_template")) {
        return impl.status();
      }
      return impl.status().with_context(where);
    }
    return Tokenizer(std::move(impl).value());
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kInternal, "{}: out of memory while loading", where);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "{}: unexpected error while loading: {}", where,
                      e.what());
  }
}

Result<Tokenizer> Tokenizer::load(const std::string& dir) {
  // Every file through the model folder's one opening policy (io/model_files.h): a regular
  // file inside the folder, never blocking, at most kMaxJsonFileBytes (a Jinja template too).
  QL_ASSIGN_OR_RETURN(const ModelDir folder, ModelDir::open(dir));
  const auto read_optional = [&](std::string_view name, std::string* text) -> Result<bool> {
    if (!folder.contains(name)) return false;
    QL_ASSIGN_OR_RETURN(const ReadFile file,
                        folder.open_file(name, kMaxJsonFileBytes, "tokenizer file"));
    QL_ASSIGN_OR_RETURN(*text, read_whole_file(file, kMaxJsonFileBytes));
    return true;
  };
  const std::string tokenizer_path = folder.path_of("tokenizer.json");
  std::string tokenizer_json;
  QL_ASSIGN_OR_RETURN(const bool has_tokenizer, read_optional("tokenizer.json", &tokenizer_json));
  if (!has_tokenizer) {
    return make_error(ErrorCode::kNotFound,
                      "{}: not found (a Hugging Face model folder holds its tokenizer there)",
                      tokenizer_path);
  }
  std::string config_json;
  QL_RETURN_IF_ERROR(read_optional("tokenizer_config.json", &config_json).status());
  QL_ASSIGN_OR_RETURN(Tokenizer tokenizer, from_json(tokenizer_json, config_json, tokenizer_path));
  auto impl = std::const_pointer_cast<TokenizerImpl>(tokenizer.impl_);
  // Newer transformers save the template beside the config; it takes precedence.
  std::string source;
  QL_ASSIGN_OR_RETURN(const bool has_template, read_optional("chat_template.jinja", &source));
  if (has_template) {
    QL_ASSIGN_OR_RETURN(ChatTemplate parsed, ChatTemplate::parse(source, "chat_template.jinja"));
    impl->config.chat_templates = {{"default", source}};
    impl->templates = {std::move(parsed)};
  }
  const std::string generation_path = folder.path_of("generation_config.json");
  std::string text;
  QL_ASSIGN_OR_RETURN(const bool has_generation, read_optional("generation_config.json", &text));
  if (has_generation) {
    QL_ASSIGN_OR_RETURN(
        const Json g,
        io_internal::parse_json_text(text, generation_path, io_internal::DuplicateKeys::kAllow));
    if (g.is_object() && g.contains("eos_token_id")) {
      const Json& e = g["eos_token_id"];
      const auto add = [&](const Json& v) {
        if (v.is_number_integer()) impl->config.generation_eos_ids.push_back(v.get<int32_t>());
      };
      if (e.is_array()) {
        for (const Json& v : e) add(v);
      } else {
        add(e);
      }
    }
  }
  return tokenizer;
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special) const {
  try {
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    QL_RETURN_IF_ERROR(impl_->encode(text, add_special, ids, nullptr));
    return ids;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kInternal, "out of memory encoding {} bytes", text.size());
  }
}

Result<Encoding> Tokenizer::encode_with_tokens(std::string_view text, bool add_special) const {
  try {
    Encoding e;
    QL_RETURN_IF_ERROR(impl_->encode(text, add_special, e.ids, &e.tokens));
    return e;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kInternal, "out of memory encoding {} bytes", text.size());
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  StreamDecoder stream = stream_decoder(skip_special);
  std::string out;
  for (const int32_t id : ids) out += stream.push(id);
  out += stream.finish();
  return out;
}

StreamDecoder Tokenizer::stream_decoder(bool skip_special) const {
  return StreamDecoder(std::make_unique<StreamDecoder::State>(
      StreamDecoder::State{impl_, skip_special, DecodeChain(impl_->decoder)}));
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto added = impl_->added.id_of(token)) return added;
  const int32_t id = impl_->model.token_to_id(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::string* t = impl_->token_of(id);
  if (t == nullptr) return std::nullopt;
  return *t;
}

bool Tokenizer::is_special(int32_t id) const {
  const std::string* t = impl_->token_of(id);
  return t != nullptr && impl_->added.is_special_content(*t);
}

int32_t Tokenizer::vocab_size() const {
  return std::max(impl_->model.max_id(), impl_->added.max_id()) + 1;
}

std::optional<std::string> Tokenizer::bos_token() const { return impl_->config.bos_token; }
std::optional<std::string> Tokenizer::eos_token() const { return impl_->config.eos_token; }

std::optional<int32_t> Tokenizer::bos_id() const {
  if (!impl_->config.bos_token) return std::nullopt;
  return token_to_id(*impl_->config.bos_token);
}

std::vector<int32_t> Tokenizer::eos_ids() const {
  std::vector<int32_t> ids;
  if (impl_->config.eos_token) {
    if (const auto id = token_to_id(*impl_->config.eos_token)) ids.push_back(*id);
  }
  for (const int32_t id : impl_->config.generation_eos_ids) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

bool Tokenizer::has_chat_template() const { return !impl_->templates.empty(); }

}  // namespace qlinear::text
