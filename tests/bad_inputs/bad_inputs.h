// The bad-input corpus: model folders and command lines an adversary would try, generated from
// the fixture writers at test time (no checked-in binaries). Each case names the error class
// qlinear must answer with and the substrings (file, tensor, key, value) its message must hold.
// bad_input_test.cc runs every case; bad_inputs_corpus writes them all to a folder so a release
// build can be tried by hand or by scripts/bad_inputs.sh.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"

namespace qlinear::bad_inputs {

struct BadInput {
  std::string name;    // "config_fifo"
  std::string group;   // the class: "hang", "escape", "overwrite", "silent", ...
  std::string defect;  // one line
  ErrorCode code = ErrorCode::kOk;
  // Compared case-insensitively with the message.
  std::vector<std::string> mentions;
  // Empty: the case is a model folder loaded as `inspect` loads it. Otherwise qlinear's
  // arguments, with "{dir}" replaced by the case folder (the model; inputs and outputs live in
  // "{dir}.io/"); the exit code must be `exit_code`.
  std::vector<std::string> cli_args;
  int exit_code = 1;
};

const std::vector<BadInput>& all_bad_inputs();
// gtest prints the case name, not its bytes.
void PrintTo(const BadInput& input, std::ostream* os);

// Writes the files of `input` into `dir` (created; emptied first).
Status write_bad_input(const BadInput& input, const std::string& dir);

}  // namespace qlinear::bad_inputs
