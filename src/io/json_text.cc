#include "io/json_text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/checkpoint.h"

namespace qlinear::io_internal {
namespace {

using nlohmann::json;

// Tracks the keys of every open object while nlohmann parses, to catch duplicates it would
// otherwise merge. Only the first duplicate is kept.
class DuplicateFinder {
 public:
  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames_.push_back(Frame{{}, pending_key_});
        break;
      case json::parse_event_t::object_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!frames_.empty() && !frames_.back().keys.insert(key).second && found_.empty()) {
          found_ = path_to(key);
        }
        pending_key_ = key;
        break;
      }
      default:
        break;
    }
    return true;
  }
  const std::vector<std::string>& found() const { return found_; }

 private:
  struct Frame {
    std::set<std::string> keys;
    std::string name;  // the key this object is the value of ("" for the root)
  };
  std::vector<std::string> path_to(const std::string& key) const {
    std::vector<std::string> path;
    for (std::size_t i = 1; i < frames_.size(); ++i) path.push_back(frames_[i].name);
    path.push_back(key);
    return path;
  }
  std::vector<Frame> frames_;
  std::string pending_key_;
  std::vector<std::string> found_;
};

// nlohmann prefixes messages with "[json.exception.parse_error.101] "; users need the rest.
std::string_view without_exception_id(std::string_view what) {
  const auto close = what.find("] ");
  if (!what.starts_with("[json.exception.") || close == std::string_view::npos) return what;
  return what.substr(close + 2);
}

}  // namespace

Result<json> parse_json_text(std::string_view text, std::string_view where,
                             DuplicateKeys duplicates, std::vector<std::string>* duplicate) {
  DuplicateFinder finder;
  json::parser_callback_t callback = nullptr;
  if (duplicates == DuplicateKeys::kReject) {
    callback = [&finder](int /*depth*/, json::parse_event_t event, json& parsed) {
      return finder.on_event(event, parsed);
    };
  }
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::kCorrupt, "{}: invalid JSON at byte {}: {}", where, e.byte,
                      without_exception_id(e.what()));
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kCorrupt, "{}: invalid JSON: {}", where,
                      without_exception_id(e.what()));
  }
  if (!finder.found().empty()) {
    if (duplicate != nullptr) *duplicate = finder.found();
    return make_error(ErrorCode::kCorrupt, "{}: duplicate JSON key {} (keys must be unique)", where,
                      fmt::format("\"{}\"", fmt::join(finder.found(), "\" / \"")));
  }
  return value;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{}: cannot open: {}",
                      path, std::strerror(err));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::kIo, "{}: read failed", path);
  return buffer.str();
}

}  // namespace qlinear::io_internal

namespace qlinear {

Result<nlohmann::json> read_json_file(const std::string& path) {
  QL_ASSIGN_OR_RETURN(std::string text, io_internal::read_text_file(path));
  return io_internal::parse_json_text(text, path, io_internal::DuplicateKeys::kAllow);
}

}  // namespace qlinear
