// A SAX handler that builds the DOM itself: each key is checked against its object once
// (std::map lookup, or a hash index for ordered objects), so parsing stays O(n log n) however
// many keys an object has, and nesting is bounded.
#include "io/json_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>
#include <utility>

#include "core/escape.h"

namespace qlinear::io_internal {
namespace {

// nlohmann prefixes messages with "[json.exception.parse_error.101] "; users need the rest.
std::string without_exception_id(std::string_view what) {
  const auto close = what.find("] ");
  if (what.starts_with("[json.exception.") && close != std::string_view::npos) {
    what = what.substr(close + 2);
  }
  return escape_for_terminal(what);
}

template <class Json>
class DomBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;
  static constexpr bool kOrdered = !std::is_same_v<Json, nlohmann::json>;

  explicit DomBuilder(DuplicateKeys duplicates) : duplicates_(duplicates) {}

  bool null() { return put(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t& /*text*/) { return put(Json(v)) != nullptr; }
  bool string(string_t& v) { return put(Json(std::move(v))) != nullptr; }
  bool binary(binary_t& v) { return put(Json::binary(std::move(v))) != nullptr; }

  bool start_object(std::size_t /*size*/) { return open(Json::object()); }
  bool start_array(std::size_t /*size*/) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Frame& frame = frames_.back();
    bool seen = false;
    if constexpr (kOrdered) {
      seen = frame.index.count(k) != 0;
    } else {
      seen = frame.value->contains(k);
    }
    if (seen && duplicates_ == DuplicateKeys::kReject) {
      if (duplicate_.empty()) {
        for (std::size_t i = 1; i < frames_.size(); ++i) duplicate_.push_back(frames_[i].key);
        duplicate_.push_back(k);
      }
      return false;
    }
    frame.pending_key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    error_position_ = position;
    error_ = without_exception_id(e.what());
    return false;
  }

  Json& root() { return root_; }
  const std::vector<std::string>& duplicate() const { return duplicate_; }
  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }
  std::size_t error_position() const { return error_position_; }

 private:
  struct Frame {
    Json* value = nullptr;
    std::string key;          // the key this container is the value of ("" in arrays, root)
    std::string pending_key;  // objects: the key whose value comes next
    std::unordered_map<std::string, std::size_t> index;  // ordered objects: key -> position
  };

  // Stores `value` where the parser is and returns it (its address stays valid while it is
  // the innermost open container: only its parent's newest element is ever pointed to).
  Json* put(Json&& value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& frame = frames_.back();
    Json& parent = *frame.value;
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    if constexpr (kOrdered) {
      // ordered_map::emplace searches linearly; the hash index replaces that search.
      using Container = typename Json::object_t::Container;
      auto& object = static_cast<Container&>(*parent.template get_ptr<typename Json::object_t*>());
      const auto [it, inserted] = frame.index.emplace(frame.pending_key, object.size());
      if (!inserted) {  // kAllow: the last value wins in the first key's place
        object[it->second].second = std::move(value);
        return &object[it->second].second;
      }
      object.emplace_back(frame.pending_key, std::move(value));
      return &object.back().second;
    } else {
      Json& slot = parent[frame.pending_key];
      slot = std::move(value);
      return &slot;
    }
  }

  bool open(Json&& container) {
    if (static_cast<int>(frames_.size()) >= kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
    const std::string key = frames_.empty() ? std::string() : frames_.back().pending_key;
    Json* value = put(std::move(container));
    frames_.push_back(Frame{value, key, {}, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  DuplicateKeys duplicates_;
  Json root_;
  std::vector<Frame> frames_;
  std::vector<std::string> duplicate_;
  bool too_deep_ = false;
  std::string error_;
  std::size_t error_position_ = 0;
};

template <class Json>
Result<Json> parse(std::string_view text, std::string_view where, DuplicateKeys duplicates,
                   std::vector<std::string>* duplicate) {
  DomBuilder<Json> builder(duplicates);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const nlohmann::detail::exception& e) {  // not expected: the handler returns false
    return make_error(ErrorCode::kCorrupt, "{}: invalid JSON: {}", where,
                      without_exception_id(e.what()));
  }
  if (ok) return std::move(builder.root());
  if (!builder.duplicate().empty()) {
    if (duplicate != nullptr) *duplicate = builder.duplicate();
    std::vector<std::string> shown;
    for (const std::string& key : builder.duplicate()) shown.push_back(escape_for_terminal(key));
    return make_error(ErrorCode::kCorrupt, "{}: duplicate JSON key {} (keys must be unique)", where,
                      fmt::format("\"{}\"", fmt::join(shown, "\" / \"")));
  }
  if (builder.too_deep()) {
    return make_error(ErrorCode::kCorrupt,
                      "{}: JSON nested more than {} levels deep (no file qlinear reads needs "
                      "that many)",
                      where, kMaxJsonDepth);
  }
  return make_error(ErrorCode::kCorrupt, "{}: invalid JSON at byte {}: {}", where,
                    builder.error_position(), builder.error());
}

}  // namespace

Result<nlohmann::json> parse_json_text(std::string_view text, std::string_view where,
                                       DuplicateKeys duplicates,
                                       std::vector<std::string>* duplicate) {
  return parse<nlohmann::json>(text, where, duplicates, duplicate);
}

Result<nlohmann::ordered_json> parse_ordered_json_text(std::string_view text,
                                                       std::string_view where,
                                                       DuplicateKeys duplicates,
                                                       std::vector<std::string>* duplicate) {
  return parse<nlohmann::ordered_json>(text, where, duplicates, duplicate);
}

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes) {
  QL_ASSIGN_OR_RETURN(const ReadFile file, open_user_file(path, max_bytes, ""));
  return read_whole_file(file, max_bytes);
}

}  // namespace qlinear::io_internal
