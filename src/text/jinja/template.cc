#include "text/jinja/template.h"

#include <new>

#include "text/jinja/interpreter.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace qlinear::text::jinja {
namespace {

// "line 3: ..." -> "<name> line 3: ..."
Status named(const Status& s, const std::string& name) {
  return Status(s.code(), name + " " + s.message());
}

}  // namespace

Result<Template> Template::parse(std::string_view source, std::string_view name) {
  Template t;
  t.name_ = std::string(name);
  Result<std::vector<Token>> tokens = tokenize(source);
  if (!tokens.ok()) return named(tokens.status(), t.name_);
  Result<Program> program = jinja::parse(*tokens);
  if (!program.ok()) return named(program.status(), t.name_);
  t.program_ = std::make_shared<const Program>(std::move(program).value());
  return t;
}

Result<std::string> Template::render(const nlohmann::ordered_json& context) const {
  try {
    Interpreter interpreter;
    Result<std::string> out = interpreter.render(*program_, context);
    if (!out.ok()) return named(out.status(), name_);
    return out;
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kUnsupported, "{}: out of memory while rendering", name_);
  }
}

}  // namespace qlinear::text::jinja
