#include "text/tokenizer_json.h"

#include <fmt/format.h>

namespace qlinear::text {
namespace {

class Handler final : public nlohmann::json_sax<Json> {
 public:
  explicit Handler(TokenizerJson& out) : out_(out) {}

  bool null() override { return value(Json()); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::kVocab) return vocab_id(v);
    return value(Json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::kVocab) {
      return vocab_id(v > static_cast<number_unsigned_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v));
    }
    return value(Json(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return value(Json(v)); }
  bool string(string_t& v) override {
    if (mode_ == Mode::kMerges) {
      if (!in_pair_) {
        out_.lists.merges.emplace_back(std::move(v), std::string());
        out_.lists.merge_is_pair.push_back(false);
      } else {
        pair_.push_back(std::move(v));
      }
      return true;
    }
    return value(Json(std::move(v)));
  }
  bool binary(binary_t&) override { return bad("binary values are not JSON"); }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::kTree) return bad_entry();
    if (pending_ == Mode::kVocab) {
      pending_ = Mode::kTree;
      mode_ = Mode::kVocab;
      out_.lists.has_vocab = true;
      return true;
    }
    if (pending_ == Mode::kMerges) return bad("model.merges must be an array");
    stack_.push_back(value_slot(Json::object()));
    return true;
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::kVocab) {
      key_ = std::move(k);
      return true;
    }
    // model.vocab / model.merges of the top level's "model" object are collected flat.
    if (stack_.size() == 2 && in_model_ && (k == "vocab" || k == "merges")) {
      pending_ = k == "vocab" ? Mode::kVocab : Mode::kMerges;
      object_element_ = nullptr;
      return true;
    }
    if (stack_.size() == 1) {
      next_is_model_ = k == "model";
      in_model_ = false;
    }
    object_element_ = &(*stack_.back())[k];
    return true;
  }
  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kTree;
      return true;
    }
    stack_.pop_back();
    if (stack_.size() == 1) in_model_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::kMerges) {
      if (in_pair_) return bad_entry();
      in_pair_ = true;
      pair_.clear();
      return true;
    }
    if (mode_ == Mode::kVocab) return bad_entry();
    if (pending_ == Mode::kMerges) {
      pending_ = Mode::kTree;
      mode_ = Mode::kMerges;
      out_.lists.has_merges = true;
      return true;
    }
    if (pending_ == Mode::kVocab) return bad("model.vocab must be an object of token -> id");
    stack_.push_back(value_slot(Json::array()));
    return true;
  }
  bool end_array() override {
    if (mode_ == Mode::kMerges) {
      if (!in_pair_) {
        mode_ = Mode::kTree;
        return true;
      }
      in_pair_ = false;
      if (pair_.size() != 2) {
        return bad(fmt::format("model.merges[{}] must be [\"a\", \"b\"], got {} strings",
                               out_.lists.merges.size(), pair_.size()));
      }
      out_.lists.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      out_.lists.merge_is_pair.push_back(true);
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    parse_error_ = fmt::format("invalid JSON at byte {}: {}", position, e.what());
    return false;
  }

  const std::string& parse_error_message() const { return parse_error_; }

 private:
  enum class Mode { kTree, kVocab, kMerges };

  bool bad_entry() {
    return bad(mode_ == Mode::kVocab
                   ? fmt::format("model.vocab.\"{}\" must be an integer id", key_)
                   : fmt::format("model.merges[{}] must be \"a b\" or [\"a\", \"b\"]",
                                 out_.lists.merges.size()));
  }
  bool bad(std::string message) {
    if (out_.lists.error.empty()) out_.lists.error = std::move(message);
    return false;
  }
  bool vocab_id(int64_t id) {
    if (id < 0 || id > INT32_MAX) {
      return bad(
          fmt::format("model.vocab.\"{}\" id {} must be a non-negative 32-bit integer", key_, id));
    }
    out_.lists.vocab.emplace_back(std::move(key_), id);
    return true;
  }
  Json* value_slot(Json v) {
    if (stack_.empty()) {
      out_.tree = std::move(v);
      return &out_.tree;
    }
    if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
      return &stack_.back()->back();
    }
    *object_element_ = std::move(v);
    if (stack_.size() == 1 && next_is_model_) in_model_ = true;
    return object_element_;
  }
  bool value(Json v) {
    if (mode_ != Mode::kTree) return bad_entry();
    if (pending_ == Mode::kVocab) return bad("model.vocab must be an object of token -> id");
    if (pending_ == Mode::kMerges) return bad("model.merges must be an array");
    value_slot(std::move(v));
    return true;
  }

  TokenizerJson& out_;
  std::vector<Json*> stack_;
  Json* object_element_ = nullptr;
  Mode mode_ = Mode::kTree;
  Mode pending_ = Mode::kTree;
  bool next_is_model_ = false;
  bool in_model_ = false;
  bool in_pair_ = false;
  std::vector<std::string> pair_;
  std::string key_;
  std::string parse_error_;
};

}  // namespace

Result<TokenizerJson> parse_tokenizer_json(std::string_view text, std::string_view where) {
  TokenizerJson out;
  Handler handler(out);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &handler);
  if (!ok) {
    if (!handler.parse_error_message().empty()) {
      // nlohmann prefixes "[json.exception.parse_error.101] "; users need the rest.
      std::string m = handler.parse_error_message();
      const size_t id = m.find("[json.exception.");
      const size_t close = m.find("] ", id == std::string::npos ? 0 : id);
      if (id != std::string::npos && close != std::string::npos) m.erase(id, close + 2 - id);
      return make_error(ErrorCode::kCorrupt, "{}: {}", where, m);
    }
    return make_error(ErrorCode::kCorrupt, "{}: {}", where, out.lists.error);
  }
  return out;
}

}  // namespace qlinear::text
