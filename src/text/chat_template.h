// Chat templates: tokenizer_config.json "chat_template" (Jinja) rendered by qlinear's own Jinja
// subset (text/jinja/), with the variables transformers passes: messages, tools, documents,
// add_generation_prompt and the special tokens (bos_token, eos_token, ...).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear::text {

namespace jinja {
class Template;
}  // namespace jinja

struct NamedTemplate {
  std::string name;  // "default" for a plain string
  std::string source;
};

class ChatTemplate {
 public:
  // Errors name `name` and the template line.
  static Result<ChatTemplate> parse(std::string_view source, std::string_view name);
  Result<std::string> render(const nlohmann::ordered_json& context) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const jinja::Template> template_;
};

}  // namespace qlinear::text
