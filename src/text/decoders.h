// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace and
// Sequence, run as a chain of streaming stages. Each stage sees tokens as begin / text... / end
// events and passes its own tokens on; a stage holds back only what a later token could still
// change (an unfinished UTF-8 character, a run of <0xNN> byte tokens, trailing characters a
// Strip may remove), so feeding ids one at a time yields exactly Hugging Face's decode of all
// of them. decode() is this same chain fed all ids at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/json_fields.h"

namespace qlinear::text {

class DecodeSink {
 public:
  virtual ~DecodeSink() = default;
  virtual void begin() = 0;                      // a token starts
  virtual void text(std::string_view part) = 0;  // more of the current token (valid UTF-8)
  virtual void end() = 0;                        // the token is complete
  virtual void finish() = 0;                     // no more tokens
};

class DecoderStage : public DecodeSink {
 public:
  virtual std::unique_ptr<DecoderStage> clone() const = 0;
  void set_next(DecodeSink* next) { next_ = next; }

 protected:
  DecodeSink* next_ = nullptr;
};

// The parsed decoder: stage prototypes, copied into each decoding chain.
class DecoderSpec {
 public:
  // null -> Hugging Face's default, tokens joined by single spaces.
  static Result<DecoderSpec> parse(const Json& value, std::string_view path);
  std::vector<std::unique_ptr<DecoderStage>> make_stages() const;

 private:
  std::vector<std::shared_ptr<const DecoderStage>> prototypes_;
};

// A chain of stages ending in a string buffer. Copyable (copies carry the held-back state).
class DecodeChain {
 public:
  explicit DecodeChain(const DecoderSpec& spec);
  DecodeChain(const DecodeChain& other);
  DecodeChain& operator=(const DecodeChain& other);

  void push_token(std::string_view token);
  void finish();
  // Text produced since the last call.
  std::string take();

 private:
  class Output final : public DecodeSink {
   public:
    void begin() override {}
    void text(std::string_view part) override { buffer.append(part); }
    void end() override {}
    void finish() override {}
    std::string buffer;
  };
  void link();
  std::vector<std::unique_ptr<DecoderStage>> stages_;
  Output output_;
};

}  // namespace qlinear::text
