// make_seeds OUT: the seed corpora of the fuzz targets, from the fixture checkpoints of every
// format (src/fixtures): config.json files, their quantization configs, the sharded fixture's
// index, and small safetensors files holding each fixture's small tensors (norms, scales,
// zero points, g_idx) so a seed stays a few KiB. Written at fuzz time; nothing is checked in.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "fixtures/builder.h"
#include "io/safetensors.h"

namespace {

namespace fs = std::filesystem;
using qlinear::fixture_internal::FixtureFiles;

constexpr std::size_t kMaxSeedTensorBytes = 2048;
constexpr int kMaxSeedTensors = 24;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qlinear;
  if (argc != 2) {
    fmt::print(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  int seeds = 0;
  for (FixtureFormat format : all_fixture_formats()) {
    const std::string name(fixture_format_name(format));
    FixtureFiles files;
    fixture_internal::build_fixture(format, FixtureOptions{}, files);
    write(out / "config" / (name + ".json"), files.config.dump(2));
    const nlohmann::ordered_json& qc =
        files.quant_config.is_null()
            ? files.config.value("quantization_config", nlohmann::ordered_json())
            : files.quant_config;
    if (!qc.is_null()) write(out / "quant" / (name + ".json"), qc.dump(2));
    seeds += 2;

    SafetensorsWriter small;
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    int kept = 0;
    for (const auto& t : files.tensors) {
      if (t.bytes.size() > kMaxSeedTensorBytes || kept >= kMaxSeedTensors) continue;
      small.add(t.name, t.dtype, t.shape, t.bytes);
      weight_map[t.name] =
          t.file == 0 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
      ++kept;
    }
    small.set_metadata("format", "pt");
    const fs::path st = out / "safetensors" / (name + ".safetensors");
    fs::create_directories(st.parent_path());
    if (!small.write(st.string()).ok()) return 1;
    if (files.sharded) {
      write(out / "index" / (name + ".json"),
            nlohmann::ordered_json{{"metadata", {{"total_size", 1234}}}, {"weight_map", weight_map}}
                .dump(2));
      ++seeds;
    }
    ++seeds;
  }
  // tokenizer.json seeds: the committed synthetic tokenizers of the text tests (each a few
  // dozen KiB), a NUL, then text to encode (fuzz_tokenizer.cc splits there).
  const fs::path synthetic = fs::path(QLINEAR_SOURCE_DIR) / "tests/data/text/synthetic";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(synthetic, ec)) {
    std::ifstream in(entry.path() / "tokenizer.json", std::ios::binary);
    if (!in) continue;
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string seed = json;
    seed += '\0';
    seed += "Hello world! 12345 caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd <|endoftext|>  \n\tx";
    write(out / "tokenizer" / (entry.path().filename().string() + ".json"), seed);
    ++seeds;
  }
  if (seeds == 0 || ec) {
    fmt::print(stderr, "make_seeds: no tokenizer seeds under {}\n", synthetic.string());
    return 1;
  }
  // A few hand-written edge seeds the fixtures do not cover.
  write(out / "index" / "minimal.json", R"({"weight_map": {"a": "model.safetensors"}})");
  write(out / "quant" / "legacy_awq.json",
        R"({"w_bit": 4, "q_group_size": 128, "zero_point": true, "version": "GEMM"})");
  write(out / "quant" / "legacy_gptq.json", R"({"bits": 4, "group_size": 128, "desc_act": false})");
  fmt::print("wrote {} seeds to {}\n", seeds + 3, out.string());
  return 0;
}
