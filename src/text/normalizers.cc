#include "text/normalizers.h"

#include <utility>
#include <vector>

#include "text/byte_level.h"
#include "text/pattern.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text {
namespace {

constexpr std::string_view kSupported =
    "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, ByteLevel, "
    "Sequence";

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  Result<std::string> normalize(std::string_view text) const override {
    return normalize_unicode(text, form_);
  }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  Result<std::string> normalize(std::string_view text) const override { return lowercase(text); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  Result<std::string> normalize(std::string_view text) const override {
    size_t begin = 0;
    size_t end = text.size();
    if (left_) {
      while (begin < end) {
        size_t i = begin;
        if (!is_white_space(next_code_point(text, i))) break;
        begin = i;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t i = end;
        if (!is_white_space(previous_code_point(text, i))) break;
        end = i;
      }
    }
    return std::string(text.substr(begin, end - begin));
  }

 private:
  bool left_;
  bool right_;
};

class StripAccents final : public Normalizer {
 public:
  Result<std::string> normalize(std::string_view text) const override {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
      const size_t at = i;
      if (!is_mark(next_code_point(text, i))) out.append(text.substr(at, i - at));
    }
    return out;
  }
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Result<std::string> normalize(std::string_view text) const override {
    std::vector<Span> matches;
    QL_RETURN_IF_ERROR(pattern_.find_all(text, matches));
    if (matches.empty()) return std::string(text);
    std::string out;
    out.reserve(text.size() + matches.size() * content_.size());
    size_t last = 0;
    for (const Span& m : matches) {
      out.append(text.substr(last, m.begin - last));
      out += content_;
      last = m.end;
    }
    out.append(text.substr(last));
    return out;
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  Result<std::string> normalize(std::string_view text) const override {
    if (text.empty()) return std::string();
    std::string out = prefix_;
    out.append(text);
    return out;
  }

 private:
  std::string prefix_;
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  Result<std::string> normalize(std::string_view text) const override {
    std::string out;
    append_byte_level_chars(out, text);
    return out;
  }
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  Result<std::string> normalize(std::string_view text) const override {
    std::string current(text);
    for (const auto& step : steps_) {
      QL_ASSIGN_OR_RETURN(current, step->normalize(current));
    }
    return current;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> Normalizer::parse(const Json& value, std::string_view path) {
  if (value.is_null()) return std::unique_ptr<Normalizer>();
  if (!value.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an object or null, got {}", path,
                      json_excerpt(value));
  }
  QL_ASSIGN_OR_RETURN(const std::string type, get_string(value, path, "type"));
  const auto unicode = [&](NormalForm form) -> Result<std::unique_ptr<Normalizer>> {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    return std::unique_ptr<Normalizer>(new UnicodeForm(form));
  };
  if (type == "NFC") return unicode(NormalForm::kNfc);
  if (type == "NFD") return unicode(NormalForm::kNfd);
  if (type == "NFKC") return unicode(NormalForm::kNfkc);
  if (type == "NFKD") return unicode(NormalForm::kNfkd);
  if (type == "Lowercase") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    return std::unique_ptr<Normalizer>(new Lowercase());
  }
  if (type == "StripAccents") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    return std::unique_ptr<Normalizer>(new StripAccents());
  }
  if (type == "ByteLevel") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type"}));
    return std::unique_ptr<Normalizer>(new ByteLevelNormalizer());
  }
  if (type == "Strip") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "strip_left", "strip_right"}));
    QL_ASSIGN_OR_RETURN(const bool left, get_bool(value, path, "strip_left"));
    QL_ASSIGN_OR_RETURN(const bool right, get_bool(value, path, "strip_right"));
    return std::unique_ptr<Normalizer>(new Strip(left, right));
  }
  if (type == "Replace") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "pattern", "content"}));
    if (!value.contains("pattern")) {
      return make_error(ErrorCode::kCorrupt, "{} is missing", child_path(path, "pattern"));
    }
    QL_ASSIGN_OR_RETURN(Pattern pattern,
                        Pattern::parse(value["pattern"], child_path(path, "pattern")));
    QL_ASSIGN_OR_RETURN(std::string content, get_string(value, path, "content"));
    return std::unique_ptr<Normalizer>(new Replace(std::move(pattern), std::move(content)));
  }
  if (type == "Prepend") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "prepend"}));
    QL_ASSIGN_OR_RETURN(std::string prefix, get_string(value, path, "prepend"));
    return std::unique_ptr<Normalizer>(new Prepend(std::move(prefix)));
  }
  if (type == "Sequence") {
    QL_RETURN_IF_ERROR(check_object(value, path, {"type", "normalizers"}));
    QL_ASSIGN_OR_RETURN(const Json* list, get_array(value, path, "normalizers"));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string item = index_path(child_path(path, "normalizers"), i);
      QL_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step, parse((*list)[i], item));
      if (step == nullptr) {
        return make_error(ErrorCode::kCorrupt, "{} must be a normalizer, got null", item);
      }
      steps.push_back(std::move(step));
    }
    return std::unique_ptr<Normalizer>(new Sequence(std::move(steps)));
  }
  return unsupported_value(child_path(path, "type"), Json(type), kSupported);
}

}  // namespace qlinear::text
