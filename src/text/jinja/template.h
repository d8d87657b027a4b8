// A Jinja template of the subset chat templates use (see docs/text.md), parsed once and
// rendered many times. Rendering follows Python Jinja2 as transformers configures it
// (trim_blocks, lstrip_blocks, loop controls, the `generation` block). Anything outside the
// subset is an error naming the template line and the construct.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace qlinear::text::jinja {

struct Program;

class Template {
 public:
  // `name` prefixes errors: "<name> line 3: ...".
  static Result<Template> parse(std::string_view source, std::string_view name = "template");
  // `context`: an object of the template's variables.
  Result<std::string> render(const nlohmann::ordered_json& context) const;

 private:
  std::string name_;
  std::shared_ptr<const Program> program_;
};

}  // namespace qlinear::text::jinja
