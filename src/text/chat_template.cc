#include "text/chat_template.h"

#include <utility>
#include <vector>

#include "text/jinja/template.h"
#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"

namespace qlinear::text {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, std::string_view name) {
  QL_ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::parse(source, name));
  ChatTemplate c;
  c.name_ = std::string(name);
  c.template_ = std::make_shared<const jinja::Template>(std::move(t));
  return c;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return template_->render(context);
}

}  // namespace qlinear::text

// ---- Tokenizer::render_chat (needs the tokenizer's special tokens) ----

namespace qlinear::text {
namespace {

using OrderedJson = nlohmann::ordered_json;

Result<OrderedJson> parse_ordered(std::string_view text, std::string_view what) {
  try {
    return OrderedJson::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", what, e.what());
  }
}

Result<const ChatTemplate*> pick_template(const TokenizerImpl& impl, bool with_tools) {
  if (impl.templates.empty()) {
    return make_error(ErrorCode::kNotFound,
                      "the tokenizer has no chat template "
                      "(tokenizer_config.json has no \"chat_template\")");
  }
  if (impl.templates.size() == 1 && impl.config.chat_templates[0].name == "default") {
    return &impl.templates[0];
  }
  const auto find = [&](std::string_view name) -> const ChatTemplate* {
    for (size_t i = 0; i < impl.templates.size(); ++i) {
      if (impl.config.chat_templates[i].name == name) return &impl.templates[i];
    }
    return nullptr;
  };
  if (with_tools) {
    if (const ChatTemplate* t = find("tool_use")) return t;
  }
  if (const ChatTemplate* t = find("default")) return t;
  std::string names;
  for (const NamedTemplate& t : impl.config.chat_templates) {
    names += (names.empty() ? "" : ", ") + t.name;
  }
  return make_error(ErrorCode::kNotFound,
                    "chat_template has no template named \"default\" "
                    "(it has: {})",
                    names);
}

}  // namespace

Result<std::string> Tokenizer::render_chat(std::string_view messages_json,
                                           bool add_generation_prompt, std::string_view tools_json,
                                           std::string_view extra_json) const {
  try {
    QL_ASSIGN_OR_RETURN(OrderedJson messages, parse_ordered(messages_json, "messages"));
    if (!messages.is_array()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "messages must be a list of {{\"role\", \"content\"}} objects");
    }
    OrderedJson tools = nullptr;
    if (!tools_json.empty()) {
      QL_ASSIGN_OR_RETURN(tools, parse_ordered(tools_json, "tools"));
      if (!tools.is_array() && !tools.is_null()) {
        return make_error(ErrorCode::kInvalidArgument, "tools must be a list");
      }
    }
    QL_ASSIGN_OR_RETURN(const ChatTemplate* chosen,
                        pick_template(*impl_, tools.is_array() && !tools.empty()));
    // What transformers' apply_chat_template passes: the conversation, tools and documents
    // (None when absent), the flag, and the special tokens map.
    OrderedJson context = OrderedJson::object();
    context["messages"] = std::move(messages);
    context["tools"] = std::move(tools);
    context["documents"] = nullptr;
    context["add_generation_prompt"] = add_generation_prompt;
    const TokenizerConfig& c = impl_->config;
    const std::pair<const char*, const std::optional<std::string>*> specials[] = {
        {"bos_token", &c.bos_token},
        {"eos_token", &c.eos_token},
        {"unk_token", &c.unk_token},
        {"pad_token", &c.pad_token}};
    for (const auto& [key, value] : specials) {
      if (*value) context[key] = **value;
    }
    if (!c.additional_special_tokens.empty()) {
      context["additional_special_tokens"] = c.additional_special_tokens;
    }
    if (!extra_json.empty()) {
      QL_ASSIGN_OR_RETURN(OrderedJson extra, parse_ordered(extra_json, "extra variables"));
      if (!extra.is_object()) {
        return make_error(ErrorCode::kInvalidArgument, "extra variables must be an object");
      }
      for (auto& [key, value] : extra.items()) context[key] = value;
    }
    return chosen->render(context);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kInternal, "out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "unexpected error while rendering: {}", e.what());
  }
}

Result<std::string> Tokenizer::render_chat(const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt) const {
  OrderedJson list = OrderedJson::array();
  for (const ChatMessage& m : messages) {
    list.push_back(OrderedJson{{"role", m.role}, {"content", m.content}});
  }
  return render_chat(list.dump(), add_generation_prompt);
}

}  // namespace qlinear::text
