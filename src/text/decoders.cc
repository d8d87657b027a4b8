#include "text/decoders.h"

#include <utility>

#include "text/byte_level.h"
#include "text/pattern.h"
#include "text/utf8.h"

namespace qlinear::text {
namespace {

constexpr std::string_view kSupported =
    "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence";

// Cut position <= want that does not split a UTF-8 character of the valid string s.
size_t char_boundary_at_or_before(std::string_view s, size_t want) {
  while (want > 0 && want < s.size() && (static_cast<unsigned char>(s[want]) & 0xC0u) == 0x80u) {
    --want;
  }
  return want;
}

template <class T>
class Cloneable : public DecoderStage {
 public:
  std::unique_ptr<DecoderStage> clone() const override {
    return std::make_unique<T>(static_cast<const T&>(*this));
  }
};

// Tokens joined by " " (no decoder configured).
class JoinWithSpaces final : public Cloneable<JoinWithSpaces> {
 public:
  void begin() override {
    if (seen_) next_->text(" ");
    seen_ = true;
    next_->begin();
  }
  void text(std::string_view part) override { next_->text(part); }
  void end() override { next_->end(); }
  void finish() override { next_->finish(); }

 private:
  bool seen_ = false;
};

// Characters -> bytes (a token with any character outside the alphabet keeps its own UTF-8),
// all tokens' bytes concatenated and read as UTF-8 with U+FFFD for ill-formed parts. Its output
// is one token.
class ByteLevelDecoder final : public Cloneable<ByteLevelDecoder> {
 public:
  void begin() override { token_.clear(); }
  void text(std::string_view part) override { token_.append(part); }
  void end() override {
    if (!open_) {
      next_->begin();
      open_ = true;
    }
    const size_t start = pending_.size();
    size_t i = 0;
    bool ok = true;
    while (i < token_.size()) {
      const int b = byte_level_byte(next_code_point(token_, i));
      if (b < 0) {
        ok = false;
        break;
      }
      pending_.push_back(static_cast<char>(b));
    }
    if (!ok) {
      pending_.resize(start);
      pending_.append(token_);
    }
    const size_t tail = incomplete_utf8_tail(pending_);
    if (pending_.size() > tail) {
      next_->text(to_valid_utf8(std::string_view(pending_).substr(0, pending_.size() - tail)));
      pending_.erase(0, pending_.size() - tail);
    }
  }
  void finish() override {
    if (open_) {
      if (!pending_.empty()) next_->text(to_valid_utf8(pending_));
      pending_.clear();
      next_->end();
    }
    next_->finish();
  }

 private:
  std::string token_;
  std::string pending_;  // bytes of an unfinished UTF-8 character
  bool open_ = false;
};

// Runs of <0xNN> tokens become the string of their bytes, or one U+FFFD per byte when those
// bytes are not valid UTF-8 as a whole. A run is held until a token that is not a byte ends it.
class ByteFallbackDecoder final : public Cloneable<ByteFallbackDecoder> {
 public:
  void begin() override { token_.clear(); }
  void text(std::string_view part) override { token_.append(part); }
  void end() override {
    int byte = -1;
    if (parse_byte_token(token_, &byte)) {
      run_.push_back(static_cast<char>(byte));
      return;
    }
    flush_run();
    next_->begin();
    next_->text(token_);
    next_->end();
  }
  void finish() override {
    flush_run();
    next_->finish();
  }

 private:
  // Rust's u8::from_str_radix(&token[3..5], 16) on a 6-byte "<0x..>" token.
  static bool parse_byte_token(std::string_view t, int* out) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return false;
    const auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int lo = hex(t[4]);
    if (lo < 0) return false;
    if (t[3] == '+') {
      *out = lo;
      return true;
    }
    const int hi = hex(t[3]);
    if (hi < 0) return false;
    *out = hi * 16 + lo;
    return true;
  }
  void flush_run() {
    if (run_.empty()) return;
    if (is_valid_utf8(run_)) {
      next_->begin();
      next_->text(run_);
      next_->end();
    } else {
      for (size_t i = 0; i < run_.size(); ++i) {
        next_->begin();
        next_->text(kReplacementUtf8);
        next_->end();
      }
    }
    run_.clear();
  }
  std::string token_;
  std::string run_;
};

// All tokens joined into one.
class FuseDecoder final : public Cloneable<FuseDecoder> {
 public:
  void begin() override {
    if (!open_) next_->begin();
    open_ = true;
  }
  void text(std::string_view part) override { next_->text(part); }
  void end() override {}
  void finish() override {
    if (open_) next_->end();
    next_->finish();
  }

 private:
  bool open_ = false;
};

// Every occurrence of the pattern in each token replaced. A literal pattern streams, holding
// back only a tail that could begin a match; a regex waits for the whole token.
class ReplaceDecoder final : public Cloneable<ReplaceDecoder> {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void begin() override {
    buffer_.clear();
    next_->begin();
  }
  void text(std::string_view part) override {
    buffer_.append(part);
    if (pattern_.is_literal()) emit(false);
  }
  void end() override {
    emit(true);
    next_->end();
  }
  void finish() override { next_->finish(); }

 private:
  void emit(bool all) {
    std::string out;
    size_t pos = 0;
    if (pattern_.is_literal()) {
      const std::string& p = pattern_.literal_text();
      size_t at;
      while ((at = buffer_.find(p, pos)) != std::string::npos) {
        out.append(buffer_, pos, at - pos);
        out += content_;
        pos = at + p.size();
      }
      size_t keep_from = buffer_.size();
      if (!all && p.size() > 1) {
        const size_t hold = std::min(p.size() - 1, buffer_.size() - pos);
        keep_from = char_boundary_at_or_before(buffer_, buffer_.size() - hold);
      }
      if (keep_from < pos) keep_from = pos;
      out.append(buffer_, pos, keep_from - pos);
      buffer_.erase(0, keep_from);
    } else {
      std::vector<Span> matches;
      // A regex that fails on a token leaves it unchanged; decode has no error channel.
      if (pattern_.find_all(buffer_, matches).ok()) {
        for (const Span& m : matches) {
          out.append(buffer_, pos, m.begin - pos);
          out += content_;
          pos = m.end;
        }
      }
      out.append(buffer_, pos, std::string::npos);
      buffer_.clear();
    }
    if (!out.empty()) next_->text(out);
  }
  Pattern pattern_;
  std::string content_;
  std::string buffer_;
};

// Up to `start` leading and `stop` trailing `content` characters of each token removed.
class StripDecoder final : public Cloneable<StripDecoder> {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void begin() override {
    leading_left_ = start_;
    leading_ = true;
    held_ = 0;
    next_->begin();
  }
  void text(std::string_view part) override {
    std::string out;
    size_t i = 0;
    while (i < part.size()) {
      const size_t at = i;
      i += utf8_length_from_lead(static_cast<unsigned char>(part[i]));
      const std::string_view ch = part.substr(at, i - at);
      const bool is_content = ch == content_;
      if (leading_) {
        if (is_content && leading_left_ > 0) {
          --leading_left_;
          continue;
        }
        leading_ = false;
      }
      if (is_content && stop_ > 0) {
        if (held_ == stop_) {
          out += content_;  // the oldest held one can no longer be trailing
        } else {
          ++held_;
        }
        continue;
      }
      for (; held_ > 0; --held_) out += content_;
      out.append(ch);
    }
    if (!out.empty()) next_->text(out);
  }
  void end() override {
    held_ = 0;  // trailing content characters are dropped
    next_->end();
  }
  void finish() override { next_->finish(); }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
  size_t leading_left_ = 0;
  bool leading_ = true;
  size_t held_ = 0;
};

// The replacement character becomes a space; in the first token it is removed instead (unless
// prepend_scheme is "never").
class MetaspaceDecoder final : public Cloneable<MetaspaceDecoder> {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void begin() override {
    first_token_ = index_ == 0;
    ++index_;
    next_->begin();
  }
  void text(std::string_view part) override {
    std::string out;
    out.reserve(part.size());
    size_t pos = 0;
    size_t at;
    while ((at = part.find(replacement_, pos)) != std::string_view::npos) {
      out.append(part.substr(pos, at - pos));
      if (!(first_token_ && strip_first_)) out.push_back(' ');
      pos = at + replacement_.size();
    }
    out.append(part.substr(pos));
    if (!out.empty()) next_->text(out);
  }
  void end() override { next_->end(); }
  void finish() override { next_->finish(); }

 private:
  std::string replacement_;
  bool strip_first_;
  size_t index_ = 0;
  bool first_token_ = false;
};

Status parse_into(const Json& value, std::string_view path,
                  std::vector<std::shared_ptr<const DecoderStage>>& out) {
  if (!value.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an object, got {}", path,
                      json_excerpt(value));
  }
  QL_ASSIGN_OR_RETURN(const std::string type, get_string(value, path, "type"));
  if (type == "ByteLevel") {
    QL_RETURN_IF_ERROR(
        check_object(value, path, {"type", "add_prefix_space", "trim_offsets", "use_regex"}));
    out.push_back(std::make_shared<ByteLevelDecoder>());
    return Status::ok_status();
  }
  if (type == "ByteFallback") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    out.push_back(std::make_shared<ByteFallbackDecoder>());
    return Status::ok_status();
  }
  if (type == "Fuse") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    out.push_back(std::make_shared<FuseDecoder>());
    return Status::ok_status();
  }
  if (type == "Replace") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "pattern", "content"}));
    if (!value.contains("pattern")) {
      return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, "pattern"));
    }
    QL_ASSIGN_OR_RETURN(Pattern pattern,
                        Pattern::parse(value["pattern"], child_path(path, "pattern")));
    QL_ASSIGN_OR_RETURN(std::string content, get_string(value, path, "content"));
    out.push_back(std::make_shared<ReplaceDecoder>(std::move(pattern), std::move(content)));
    return Status::ok_status();
  }
  if (type == "Strip") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "content", "start", "stop"}));
    QL_ASSIGN_OR_RETURN(std::string content, get_string(value, path, "content"));
    if (count_code_points(content) != 1) {
      return make_error(ErrorCode::kCorrupt, "{} \"{}\" must be one character",
                        child_path(path, "content"), content);
    }
    QL_ASSIGN_OR_RETURN(const int64_t start, get_int(value, path, "start"));
    QL_ASSIGN_OR_RETURN(const int64_t stop, get_int(value, path, "stop"));
    if (start < 0 || stop < 0) {
      return make_error(ErrorCode::kCorrupt, "{}: start and stop must not be negative", path);
    }
    out.push_back(std::make_shared<StripDecoder>(std::move(content), static_cast<size_t>(start),
                                                 static_cast<size_t>(stop)));
    return Status::ok_status();
  }
  if (type == "Metaspace") {
    QL_RETURN_IF_ERROR(check_object(
        value, path,
        {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"}));
    QL_ASSIGN_OR_RETURN(std::string replacement, get_string(value, path, "replacement"));
    if (count_code_points(replacement) != 1) {
      return make_error(ErrorCode::kCorrupt, "{} \"{}\" must be one character",
                        child_path(path, "replacement"), replacement);
    }
    bool strip_first = true;
    if (value.contains("prepend_scheme")) {
      QL_ASSIGN_OR_RETURN(const std::string s, get_string(value, path, "prepend_scheme"));
      if (s != "always" && s != "first" && s != "never") {
        return unsupported_value(child_path(path, "prepend_scheme"), Json(s),
                                 "always, first, never");
      }
      strip_first = s != "never";
    }
    if (value.contains("add_prefix_space")) {
      QL_ASSIGN_OR_RETURN(const bool add, get_bool(value, path, "add_prefix_space"));
      if (!add) strip_first = false;
    }
    out.push_back(std::make_shared<MetaspaceDecoder>(std::move(replacement), strip_first));
    return Status::ok_status();
  }
  if (type == "Sequence") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "decoders"}));
    QL_ASSIGN_OR_RETURN(const Json* list, get_array(value, path, "decoders"));
    for (size_t i = 0; i < list->size(); ++i) {
      QL_RETURN_IF_ERROR(parse_into((*list)[i], index_path(child_path(path, "decoders"), i), out));
    }
    return Status::ok_status();
  }
  return unsupported_value(child_path(path, "type"), Json(type), kSupported);
}

}  // namespace

Result<DecoderSpec> DecoderSpec::parse(const Json& value, std::string_view path) {
  DecoderSpec spec;
  if (value.is_null()) {
    spec.prototypes_.push_back(std::make_shared<JoinWithSpaces>());
    return spec;
  }
  QL_RETURN_IF_ERROR(parse_into(value, path, spec.prototypes_));
  return spec;
}

std::vector<std::unique_ptr<DecoderStage>> DecoderSpec::make_stages() const {
  std::vector<std::unique_ptr<DecoderStage>> stages;
  stages.reserve(prototypes_.size());
  for (const auto& p : prototypes_) stages.push_back(p->clone());
  return stages;
}

DecodeChain::DecodeChain(const DecoderSpec& spec) : stages_(spec.make_stages()) { link(); }

DecodeChain::DecodeChain(const DecodeChain& other) : output_(other.output_) {
  stages_.reserve(other.stages_.size());
  for (const auto& s : other.stages_) stages_.push_back(s->clone());
  link();
}

DecodeChain& DecodeChain::operator=(const DecodeChain& other) {
  if (this == &other) return *this;
  stages_.clear();
  for (const auto& s : other.stages_) stages_.push_back(s->clone());
  output_ = other.output_;
  link();
  return *this;
}

void DecodeChain::link() {
  for (size_t i = 0; i < stages_.size(); ++i) {
    stages_[i]->set_next(i + 1 < stages_.size() ? static_cast<DecodeSink*>(stages_[i + 1].get())
                                                : &output_);
  }
}

void DecodeChain::push_token(std::string_view token) {
  DecodeSink* head = stages_.empty() ? static_cast<DecodeSink*>(&output_) : stages_.front().get();
  head->begin();
  head->text(token);
  head->end();
}

void DecodeChain::finish() {
  DecodeSink* head = stages_.empty() ? static_cast<DecodeSink*>(&output_) : stages_.front().get();
  head->finish();
}

std::string DecodeChain::take() {
  std::string out = std::move(output_.buffer);
  output_.buffer.clear();
  return out;
}

}  // namespace qlinear::text
