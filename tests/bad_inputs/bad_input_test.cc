// Runs every case of the bad-input corpus: a model folder is loaded the way `inspect` loads it
// (open, parse the quantization config, plan and validate, convert every layer); a command line
// runs the CLI of this build under a time limit. Each must fail with the case's error class and a
// message naming the culprit, without hanging, and the CLI must print no raw control character
// and no exception text.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bad_inputs/bad_inputs.h"
#include "convert/convert.h"
#include "io/checkpoint.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear::bad_inputs {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Status load_like_inspect(const std::string& dir) {
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(dir));
  QL_ASSIGN_OR_RETURN(auto config, parse_quant_config(checkpoint));
  QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> layers, plan_linear_layers(checkpoint, *config));
  for (const LinearLayer& layer : layers) {
    QL_RETURN_IF_ERROR(load_canonical(checkpoint, layer).status());
  }
  return Status::ok_status();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliRun {
  int exit_code = -1;
  std::string err;
};

// The CLI with `args` under `timeout`, stderr captured (a hang exits 124).
CliRun run_cli(const std::vector<std::string>& args, const std::string& dir) {
  const std::string err_path = dir + ".stderr";
  std::string command = "timeout 120 " + shell_quote(QLINEAR_CLI_PATH);
  for (std::string a : args) {
    for (auto at = a.find("{dir}"); at != std::string::npos; at = a.find("{dir}")) {
      a.replace(at, 5, dir);
    }
    command += " " + shell_quote(a);
  }
  command += " >/dev/null 2>" + shell_quote(err_path);
  CliRun run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  run.err = text.str();
  return run;
}

void expect_mentions(const std::string& message, const BadInput& input) {
  for (const std::string& needle : input.mentions) {
    EXPECT_NE(lower(message).find(lower(needle)), std::string::npos)
        << "'" << needle << "' not in: " << message;
  }
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, FailsWithItsErrorClassAndNamesTheCulprit) {
  const BadInput& input = GetParam();
  SCOPED_TRACE(input.name + ": " + input.defect);
  const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/bad_inputs/" + input.name;
  fs::create_directories(fs::path(dir).parent_path());
  ASSERT_TRUE(write_bad_input(input, dir).ok());
  if (input.cli_args.empty()) {
    const Status status = load_like_inspect(dir);
    ASSERT_FALSE(status.ok()) << "loaded without an error";
    EXPECT_EQ(status.code(), input.code) << status.to_string();
    expect_mentions(status.message(), input);
    return;
  }
  const CliRun run = run_cli(input.cli_args, dir);
  EXPECT_EQ(run.exit_code, input.exit_code) << run.err;
  expect_mentions(run.err, input);
  EXPECT_LT(run.err.size(), 400u) << "a short message: " << run.err;
  EXPECT_EQ(lower(run.err).find("exception"), std::string::npos) << run.err;
}

std::string case_name(const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputTest, ::testing::ValuesIn(all_bad_inputs()), case_name);

// Through the CLI, names with control characters reach the terminal escaped.
TEST(BadInputCli, ControlCharactersInNamesArePrintedEscaped) {
  for (const char* name : {"tensor_name_ansi", "tensor_name_nul"}) {
    const auto& inputs = all_bad_inputs();
    const auto it = std::find_if(inputs.begin(), inputs.end(),
                                 [&](const BadInput& b) { return b.name == name; });
    ASSERT_NE(it, inputs.end());
    const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/bad_inputs_cli/" + name;
    fs::create_directories(fs::path(dir).parent_path());
    ASSERT_TRUE(write_bad_input(*it, dir).ok());
    const CliRun run = run_cli({"inspect", "--model", dir}, dir);
    EXPECT_EQ(run.exit_code, 1) << run.err;
    for (char c : run.err) {
      const auto byte = static_cast<unsigned char>(c);
      EXPECT_FALSE(byte < 0x20 && c != '\n')
          << "raw control byte " << int(byte) << " in " << run.err;
    }
    EXPECT_NE(run.err.find("\\x"), std::string::npos) << run.err;
  }
}

// The refused outputs are left as they were.
TEST(BadInputCli, RefusedOutputsAreUntouched) {
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  const auto& inputs = all_bad_inputs();
  const auto it = std::find_if(inputs.begin(), inputs.end(),
                               [](const BadInput& b) { return b.name == "layer_output_symlink"; });
  ASSERT_NE(it, inputs.end());
  const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/bad_inputs_out/link";
  fs::create_directories(fs::path(dir).parent_path());
  ASSERT_TRUE(write_bad_input(*it, dir).ok());
  const CliRun refused = run_cli(it->cli_args, dir);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(fs::is_symlink(dir + ".io/y.safetensors"));
  std::ifstream keep(dir + ".io/keep.txt");
  std::string text;
  keep >> text;
  EXPECT_EQ(text, "keep");
  // With --force-output the link's target is written and the link stays.
  std::vector<std::string> args = it->cli_args;
  args.push_back("--force-output");
  const CliRun through = run_cli(args, dir);
  EXPECT_EQ(through.exit_code, 0) << through.err;
  EXPECT_TRUE(fs::is_symlink(dir + ".io/y.safetensors"));
  EXPECT_GT(fs::file_size(dir + ".io/keep.txt"), 8u);
}

}  // namespace
}  // namespace qlinear::bad_inputs
