// tokenizer.json "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace,
// Prepend, ByteLevel and Sequence. Hugging Face tracks offsets through normalization; qlinear
// needs only the text, so a normalizer is a function from valid UTF-8 to valid UTF-8.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "text/json_fields.h"

namespace qlinear::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8.
  virtual Result<std::string> normalize(std::string_view text) const = 0;

  // null -> no normalizer (nullptr).
  static Result<std::unique_ptr<Normalizer>> parse(const Json& value, std::string_view path);
};

}  // namespace qlinear::text
