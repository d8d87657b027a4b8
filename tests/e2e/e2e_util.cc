#include "e2e_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qlinear::e2e {

std::string fresh_dir(const std::string& group, const std::string& name) {
  const std::string dir = std::string(QLINEAR_TEST_TMPDIR) + "/e2e/" + group + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CliRun run_cli(const std::vector<std::string>& args, const std::string& scratch_dir,
               const std::string& disabled_kernels) {
  const std::string err_path = scratch_dir + "/stderr.txt";
  std::string command = "env -u QLINEAR_DISABLED_KERNELS ";
  if (!disabled_kernels.empty()) {
    command += "QLINEAR_DISABLED_KERNELS=" + shell_quote(disabled_kernels) + " ";
  }
  command += shell_quote(QLINEAR_CLI_PATH);
  for (const std::string& a : args) command += " " + shell_quote(a);
  command += " 2>" + shell_quote(err_path);
  CliRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  return r;
}

std::vector<FusedLayer> expected_fused_layers(const FixtureModel& model) {
  std::vector<FusedLayer> out;
  for (int i = 0; i < model.options.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "self_attn.qkv_proj",
                   {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"}});
    out.push_back({p + "self_attn.o_proj", {p + "self_attn.o_proj"}});
    out.push_back({p + "mlp.gate_up_proj", {p + "mlp.gate_proj", p + "mlp.up_proj"}});
    out.push_back({p + "mlp.down_proj", {p + "mlp.down_proj"}});
  }
  out.push_back({"lm_head", {"lm_head"}});
  return out;
}

QuantFormat expected_quant_format(FixtureFormat format) {
  switch (format) {
    case FixtureFormat::kAwq:
    case FixtureFormat::kAwqLegacyConfig:
    case FixtureFormat::kSharded:
      return QuantFormat::kAwq;
    case FixtureFormat::kGptqV1Sym4:
    case FixtureFormat::kGptqV2Sym4:
    case FixtureFormat::kGptqAsym4:
    case FixtureFormat::kGptqActOrder:
    case FixtureFormat::kGptq8Bit:
    case FixtureFormat::kGptq2Bit:
    case FixtureFormat::kGptqDynamic:
      return QuantFormat::kGptq;
    case FixtureFormat::kAutoRoundGptq:
    case FixtureFormat::kAutoRoundAwq:
      return QuantFormat::kAutoRound;
    case FixtureFormat::kCtW4A16:
    case FixtureFormat::kCtW8A16AsymChannel:
    case FixtureFormat::kCtFp8:
    case FixtureFormat::kCtFp8Dynamic:
    case FixtureFormat::kCtFp8Block:
      return QuantFormat::kCompressedTensors;
    case FixtureFormat::kFp8Static:
    case FixtureFormat::kFp8Block:
      return QuantFormat::kFp8;
    case FixtureFormat::kUnquantized:
      return QuantFormat::kUnquantized;
  }
  return QuantFormat::kUnquantized;
}

std::string param_name(FixtureFormat format) { return std::string(fixture_format_name(format)); }

}  // namespace qlinear::e2e
