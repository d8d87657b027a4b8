#include "text/pre_tokenizers.h"

#include <algorithm>
#include <utility>

#include "text/byte_level.h"
#include "text/pattern.h"
#include "text/regex.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text {
namespace {

constexpr std::string_view kSupported = "ByteLevel, Split, Metaspace, Digits, Sequence";

// GPT-2's pre-tokenization regex, which ByteLevel applies when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<Behavior> parse_behavior(const Json& obj, std::string_view path) {
  QL_ASSIGN_OR_RETURN(const std::string b, get_string(obj, path, "behavior"));
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  return unsupported_value(child_path(path, "behavior"), Json(b),
                           "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Segment {
  size_t begin;
  size_t end;
  bool match;
};

// Hugging Face's NormalizedString::split: `matches` cover parts of `piece`; the gaps between
// them are non-matches; the behaviour decides how both become pieces.
void split_piece(const Piece& piece, const std::vector<Span>& matches, Behavior behavior,
                 bool invert, std::vector<Piece>& out) {
  const std::string_view text = piece.text;
  if (text.empty()) return;
  std::vector<Segment> segments;
  segments.reserve(matches.size() * 2 + 1);
  size_t prev = 0;
  for (const Span& m : matches) {
    if (prev != m.begin) segments.push_back({prev, m.begin, invert});
    segments.push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev != text.size()) segments.push_back({prev, text.size(), invert});

  std::vector<Segment> merged;
  merged.reserve(segments.size());
  switch (behavior) {
    case Behavior::kIsolated:
      merged = segments;
      break;
    case Behavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.match) merged.push_back(s);
      }
      break;
    case Behavior::kContiguous: {
      bool previous = false;
      for (const Segment& s : segments) {
        if (s.match == previous && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous = s.match;
      }
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Segment& s : segments) {
        if (s.match && !previous && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous = s.match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous = false;
      for (size_t k = segments.size(); k-- > 0;) {
        const Segment& s = segments[k];
        if (s.match && !previous && !merged.empty()) {
          merged.back().begin = s.begin;
        } else {
          merged.push_back(s);
        }
        previous = s.match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
  }
  for (const Segment& s : merged) {
    if (s.end == s.begin) continue;
    // Only the piece starting where the parent starts keeps its place at the input's origin.
    out.push_back({text.substr(s.begin, s.end - s.begin), piece.at_origin && s.begin == 0});
  }
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::shared_ptr<const Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  Status apply(std::vector<Piece>& pieces, PieceArena& arena) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    std::vector<Span> matches;
    for (Piece piece : pieces) {
      if (add_prefix_space_ && (piece.text.empty() || piece.text.front() != ' ')) {
        std::string with_space = " ";
        with_space.append(piece.text);
        piece.text = arena.keep(std::move(with_space));
      }
      if (regex_ != nullptr) {
        matches.clear();
        QL_RETURN_IF_ERROR(regex_->find_all(piece.text, matches));
        split_piece(piece, matches, Behavior::kIsolated, false, out);
      } else if (!piece.text.empty()) {
        out.push_back(piece);
      }
    }
    if (map_bytes_) {
      for (Piece& piece : out) {
        std::string mapped;
        append_byte_level_chars(mapped, piece.text);
        piece.text = arena.keep(std::move(mapped));
      }
    }
    pieces = std::move(out);
    return Status::ok_status();
  }

  bool defer_byte_mapping() override {
    map_bytes_ = false;
    return true;
  }

 private:
  bool add_prefix_space_;
  std::shared_ptr<const Regex> regex_;  // null when use_regex is false
  bool map_bytes_ = true;
};

class Split final : public PreTokenizer {
 public:
  Split(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  Status apply(std::vector<Piece>& pieces, PieceArena&) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 4);
    std::vector<Span> matches;
    for (const Piece& piece : pieces) {
      matches.clear();
      QL_RETURN_IF_ERROR(pattern_.find_all(piece.text, matches));
      split_piece(piece, matches, behavior_, invert_, out);
    }
    pieces = std::move(out);
    return Status::ok_status();
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  Status apply(std::vector<Piece>& pieces, PieceArena& arena) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 4);
    std::vector<Span> matches;
    for (Piece piece : pieces) {
      std::string replaced;
      replaced.reserve(piece.text.size() + replacement_.size());
      const bool starts_with_replacement =
          piece.text.substr(0, 1) == " " ||
          piece.text.substr(0, replacement_.size()) == replacement_;
      const bool prepend = !piece.text.empty() && !starts_with_replacement &&
                           (scheme_ == PrependScheme::kAlways ||
                            (scheme_ == PrependScheme::kFirst && piece.at_origin));
      if (prepend) replaced += replacement_;
      for (const char c : piece.text) {
        if (c == ' ') {
          replaced += replacement_;
        } else {
          replaced.push_back(c);
        }
      }
      piece.text = arena.keep(std::move(replaced));
      if (!split_) {
        if (!piece.text.empty()) out.push_back(piece);
        continue;
      }
      matches.clear();
      size_t pos = 0;
      while ((pos = piece.text.find(replacement_, pos)) != std::string_view::npos) {
        matches.push_back({pos, pos + replacement_.size()});
        pos += replacement_.size();
      }
      split_piece(piece, matches, Behavior::kMergedWithNext, false, out);
    }
    pieces = std::move(out);
    return Status::ok_status();
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}

  Status apply(std::vector<Piece>& pieces, PieceArena&) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    std::vector<Span> matches;
    for (const Piece& piece : pieces) {
      matches.clear();
      size_t i = 0;
      while (i < piece.text.size()) {
        const size_t at = i;
        if (is_numeric(next_code_point(piece.text, i))) matches.push_back({at, i});
      }
      split_piece(piece, matches, individual_ ? Behavior::kIsolated : Behavior::kContiguous, false,
                  out);
    }
    pieces = std::move(out);
    return Status::ok_status();
  }

 private:
  bool individual_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}

  Status apply(std::vector<Piece>& pieces, PieceArena& arena) const override {
    for (const auto& step : steps_) QL_RETURN_IF_ERROR(step->apply(pieces, arena));
    return Status::ok_status();
  }

  bool defer_byte_mapping() override {
    return !steps_.empty() && steps_.back()->defer_byte_mapping();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::parse(const Json& value,
                                                          std::string_view path) {
  if (value.is_null()) return std::unique_ptr<PreTokenizer>();
  if (!value.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an object or null, got {}", path,
                      json_excerpt(value));
  }
  QL_ASSIGN_OR_RETURN(const std::string type, get_string(value, path, "type"));
  if (type == "ByteLevel") {
    QL_RETURN_IF_ERROR(
        check_object(value, path, {"type", "add_prefix_space", "trim_offsets", "use_regex"}));
    QL_ASSIGN_OR_RETURN(const bool add_prefix_space,
                        get_bool(value, path, "add_prefix_space", true));
    QL_ASSIGN_OR_RETURN(const bool use_regex, get_bool(value, path, "use_regex", true));
    // trim_offsets only changes offsets, which qlinear does not report.
    std::shared_ptr<const Regex> regex;
    if (use_regex) {
      QL_ASSIGN_OR_RETURN(Regex compiled,
                          Regex::compile(kGpt2Pattern, child_path(path, "use_regex")));
      regex = std::make_shared<const Regex>(std::move(compiled));
    }
    return std::unique_ptr<PreTokenizer>(new ByteLevel(add_prefix_space, std::move(regex)));
  }
  if (type == "Split") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "pattern", "behavior", "invert"}));
    if (!value.contains("pattern")) {
      return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, "pattern"));
    }
    QL_ASSIGN_OR_RETURN(Pattern pattern,
                        Pattern::parse(value["pattern"], child_path(path, "pattern")));
    QL_ASSIGN_OR_RETURN(const Behavior behavior, parse_behavior(value, path));
    QL_ASSIGN_OR_RETURN(const bool invert, get_bool(value, path, "invert"));
    return std::unique_ptr<PreTokenizer>(new Split(std::move(pattern), behavior, invert));
  }
  if (type == "Metaspace") {
    QL_RETURN_IF_ERROR(check_object(
        value, path,
        {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"}));
    QL_ASSIGN_OR_RETURN(std::string replacement, get_string(value, path, "replacement"));
    if (replacement.empty() || count_code_points(replacement) != 1) {
      return make_error(ErrorCode::kCorrupt, "{} \"{}\" must be one character",
                        child_path(path, "replacement"), replacement);
    }
    PrependScheme scheme = PrependScheme::kAlways;
    if (value.contains("prepend_scheme")) {
      QL_ASSIGN_OR_RETURN(const std::string s, get_string(value, path, "prepend_scheme"));
      if (s == "always") {
        scheme = PrependScheme::kAlways;
      } else if (s == "first") {
        scheme = PrependScheme::kFirst;
      } else if (s == "never") {
        scheme = PrependScheme::kNever;
      } else {
        return unsupported_value(child_path(path, "prepend_scheme"), Json(s),
                                 "always, first, never");
      }
    }
    // Legacy files: add_prefix_space false means "never" (and contradicts any other scheme).
    if (value.contains("add_prefix_space")) {
      QL_ASSIGN_OR_RETURN(const bool add, get_bool(value, path, "add_prefix_space"));
      if (!add) {
        if (value.contains("prepend_scheme") && scheme != PrependScheme::kNever) {
          return make_error(ErrorCode::kMisconfigured,
                            "{} false contradicts prepend_scheme of the same Metaspace",
                            child_path(path, "add_prefix_space"));
        }
        scheme = PrependScheme::kNever;
      }
    }
    QL_ASSIGN_OR_RETURN(const bool split, get_bool(value, path, "split", true));
    return std::unique_ptr<PreTokenizer>(new Metaspace(std::move(replacement), scheme, split));
  }
  if (type == "Digits") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "individual_digits"}));
    QL_ASSIGN_OR_RETURN(const bool individual, get_bool(value, path, "individual_digits", false));
    return std::unique_ptr<PreTokenizer>(new Digits(individual));
  }
  if (type == "Sequence") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "pretokenizers"}));
    QL_ASSIGN_OR_RETURN(const Json* list, get_array(value, path, "pretokenizers"));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item = index_path(child_path(path, "pretokenizers"), i);
      QL_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step, parse((*list)[i], item));
      if (step == nullptr) {
        return make_error(ErrorCode::kCorrupt, "{} must be a pre-tokenizer, got null", item);
      }
      steps.push_back(std::move(step));
    }
    return std::unique_ptr<PreTokenizer>(new Sequence(std::move(steps)));
  }
  return unsupported_value(child_path(path, "type"), Json(type), kSupported);
}

}  // namespace qlinear::text
