// Names from checkpoints are untrusted bytes: before one reaches a terminal, control characters
// (a NUL, an ANSI escape, a carriage return that rewrites the line) and bytes that are not
// UTF-8 are shown as escapes, so what the user reads is what the file holds.
#pragma once

#include <string>
#include <string_view>

namespace qlinear {

// `text` with C0 controls, DEL, C1 controls (U+0080..U+009F) and bytes of invalid UTF-8 written
// as \xNN. Printable text, multi-byte UTF-8 included, is returned unchanged.
std::string escape_for_terminal(std::string_view text);

// Like escape_for_terminal, but keeps '\n' (for multi-line messages).
std::string escape_message(std::string_view text);

// True when escape_for_terminal would change `text`.
bool needs_escape(std::string_view text);

}  // namespace qlinear
