// qlinear's tokenizer: Hugging Face `tokenizer.json` (BPE models: byte-level like GPT-2,
// Llama-3 and Qwen, SentencePiece-style like Llama-2 and Mistral) plus `tokenizer_config.json`
// (BOS/EOS rules, special tokens, the chat template), giving the ids Hugging Face's own
// `tokenizers` gives. Components or options it does not implement are load errors naming the
// JSON key and value. Thread-safe: a Tokenizer is immutable after load, and cheap to copy (the
// copies share one implementation).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace qlinear::text {

struct TokenizerImpl;

// Decodes ids one at a time for token-by-token output. The concatenation of what push()
// returned and what finish() returns equals Tokenizer::decode of all the ids pushed; push()
// never returns half a UTF-8 character (it holds text back until no later id can change it).
class StreamDecoder {
 public:
  StreamDecoder(const StreamDecoder& other);
  StreamDecoder& operator=(const StreamDecoder& other);
  StreamDecoder(StreamDecoder&&) noexcept;
  StreamDecoder& operator=(StreamDecoder&&) noexcept;
  ~StreamDecoder();

  // Text completed by `id` (often empty while a character or byte run is unfinished). Ids with
  // no token are skipped, as Hugging Face's decode skips them.
  std::string push(int32_t id);
  // What is still held back, as decode would end; call once, after the last push.
  std::string finish();

 private:
  friend class Tokenizer;
  struct State;
  explicit StreamDecoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;  // vocabulary strings, as Hugging Face's Encoding.tokens
};

struct ChatMessage {
  std::string role;
  std::string content;
};

class Tokenizer {
 public:
  // DIR/tokenizer.json, plus DIR/tokenizer_config.json, DIR/chat_template.jinja and
  // DIR/generation_config.json when present. Needs no weights and no config.json.
  static Result<Tokenizer> load(const std::string& dir);
  // The same from file contents (`config_json` may be empty). `where` prefixes errors.
  static Result<Tokenizer> from_json(std::string_view tokenizer_json,
                                     std::string_view config_json = {},
                                     std::string_view where = "tokenizer.json");

  // Ids of `text`. Invalid UTF-8 is first repaired (U+FFFD per maximal ill-formed subpart, as
  // Python's "replace" does). Special tokens written in the text are always recognized;
  // `add_special` adds what the post-processor adds (BOS/EOS). Errors only on resource
  // limits of the regex engine.
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_special = true) const;
  Result<Encoding> encode_with_tokens(std::string_view text, bool add_special = true) const;

  // Hugging Face's decode: ids without a token are skipped; with `skip_special`, tokens marked
  // special are left out.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  StreamDecoder stream_decoder(bool skip_special = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // One past the largest id of the model vocabulary and the added tokens.
  int32_t vocab_size() const;

  // From tokenizer_config.json (and generation_config.json for further end ids).
  std::optional<int32_t> bos_id() const;
  std::vector<int32_t> eos_ids() const;
  std::optional<std::string> bos_token() const;
  std::optional<std::string> eos_token() const;

  bool has_chat_template() const;
  // Renders the chat template (tokenizer_config.json "chat_template", the template named
  // "default" when it is a list, "tool_use" when tools are given and it exists). `messages_json`
  // is the OpenAI-style list of {"role", "content", ...}; `tools_json` an optional list of
  // tool definitions; `extra_json` an optional object of further template variables.
  Result<std::string> render_chat(std::string_view messages_json, bool add_generation_prompt,
                                  std::string_view tools_json = {},
                                  std::string_view extra_json = {}) const;
  Result<std::string> render_chat(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt) const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl);
  std::shared_ptr<const TokenizerImpl> impl_;
};

}  // namespace qlinear::text
