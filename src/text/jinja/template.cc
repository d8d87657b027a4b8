#include "text/jinja/template.h"

namespace qlinear::text::jinja {

struct Program {};

Result<Template> Template::parse(std::string_view, std::string_view name) {
  Template t;
  t.name_ = std::string(name);
  t.program_ = std::make_shared<Program>();
  return t;
}

Result<std::string> Template::render(const nlohmann::ordered_json&) const {
  return make_error(ErrorCode::kUnsupported, "{}: not yet", name_);
}

}  // namespace qlinear::text::jinja
