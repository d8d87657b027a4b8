// libFuzzer target: tokenizer.json loading and encoding. The input is split at its first NUL
// byte (JSON text never holds a raw one): the bytes before are tokenizer.json, the bytes after
// the text to encode (a fixed sample when there is no NUL). Beyond "no crash, no sanitizer
// report, no hang": every id encode returns names a token of the vocabulary, and decoding the
// ids gives the same text whether all at once or through the streaming decoder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos
                                    ? std::string_view("Hello world, 123 h\xc3\xa9llo <s>\n\t!")
                                    : input.substr(nul + 1);
  auto tokenizer = qlinear::text::Tokenizer::from_json(json);
  if (!tokenizer.ok()) return 0;
  for (const bool add_special : {false, true}) {
    auto ids = tokenizer->encode(text, add_special);
    if (!ids.ok()) continue;  // a regex engine resource limit, reported as an error
    for (const int32_t id : *ids) {
      if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();
      if (!tokenizer->id_to_token(id).has_value()) __builtin_trap();
    }
    const std::string whole = tokenizer->decode(*ids);
    (void)tokenizer->decode(*ids, /*skip_special=*/true);
    auto stream = tokenizer->stream_decoder();
    std::string streamed;
    for (const int32_t id : *ids) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != whole) __builtin_trap();  // StreamDecoder's promise (text/tokenizer.h)
  }
  return 0;
}
