// Filters, tests, methods of str / dict values and global functions of the Jinja subset
// (the list is in docs/text.md). Unknown names are errors naming the line and the name.
#pragma once

#include <string>

#include "core/status.h"
#include "text/jinja/value.h"

namespace qlinear::text::jinja {

class Interpreter;
class Frame;

Result<Value> apply_filter(Interpreter& in, const std::string& name, const Value& operand,
                           CallArgs& args, int line);
Result<bool> apply_test(Interpreter& in, const std::string& name, const Value& operand,
                        CallArgs& args, int line);
// Methods Python str / dict values have that templates call (str.strip, dict.items, ...).
bool has_method(const Value& receiver, const std::string& name);
Result<Value> call_method(Interpreter& in, const Value& receiver, const std::string& name,
                          CallArgs& args, int line);
// range, namespace, dict, raise_exception, strftime_now.
void install_globals(Frame& globals);

}  // namespace qlinear::text::jinja
