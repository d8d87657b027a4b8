// bad_inputs_corpus OUT: writes every case of the bad-input corpus into OUT/<name>/ and one JSON
// line per case into OUT/manifest.jsonl (name, group, defect, error class, mentions, CLI
// arguments with {dir} for the case folder; no arguments means `qlinear inspect --model`).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bad_inputs/bad_inputs.h"

int main(int argc, char** argv) {
  using namespace qlinear;
  if (argc != 2) {
    fmt::print(stderr, "usage: bad_inputs_corpus OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  std::filesystem::create_directories(out);
  std::ofstream manifest(out + "/manifest.jsonl");
  int failed = 0;
  for (const bad_inputs::BadInput& input : bad_inputs::all_bad_inputs()) {
    const Status status = bad_inputs::write_bad_input(input, out + "/" + input.name);
    if (!status.ok()) {
      fmt::print(stderr, "{}: {}\n", input.name, status.to_string());
      ++failed;
      continue;
    }
    const nlohmann::json line = {
        {"name", input.name},          {"group", input.group},
        {"defect", input.defect},      {"error", std::string(error_code_name(input.code))},
        {"mentions", input.mentions},  {"args", input.cli_args},
        {"exit_code", input.exit_code}};
    manifest << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  fmt::print("wrote {} cases to {}\n", bad_inputs::all_bad_inputs().size() - failed, out);
  return failed == 0 ? 0 : 1;
}
