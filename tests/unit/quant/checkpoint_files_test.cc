// Which safetensors files a checkpoint folder loads (issue 11 item 5): the files Hugging Face
// loads. With model.safetensors.index.json only its shards; else model.safetensors; any other
// *.safetensors file (Mistral's consolidated.safetensors, a user's own) is ignored and not
// loaded. Fixture folders (src/fixtures) with a stray file beside the model's: the plan must be
// the one of the folder without it, and the stray tensors must not be in the checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixtures/fixtures.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"
#include "quant_test_util.h"

namespace qlinear::quant_test {
namespace {

namespace fs = std::filesystem;

fs::path fixture_dir(const std::string& name, FixtureFormat format) {
  const fs::path dir = fs::path(QLINEAR_TEST_TMPDIR) / name;
  auto model = write_fixture(format, dir.string());
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return dir;
}

// A file holding a tensor the model also has (other values) and one no layer reads: loaded, it
// would be "in both files" or an orphan.
void write_stray(const fs::path& path) {
  SafetensorsWriter writer;
  writer.add_values<uint16_t>("model.norm.weight", DType::kBF16, {256},
                              std::vector<uint16_t>(256, 0x4000));
  writer.add_values<float>("stray.extra.weight", DType::kF32, {2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(writer.write(path.string()).ok());
}

std::vector<std::string> file_names(const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const auto& file : checkpoint.files()) names.push_back(file->file_name());
  return names;
}

std::vector<std::string> plan_names(const Checkpoint& checkpoint) {
  auto config = parse_quant_config(checkpoint);
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return {};
  auto layers = plan_linear_layers(checkpoint, **config);
  EXPECT_TRUE(layers.ok()) << layers.status().to_string();
  if (!layers.ok()) return {};
  std::vector<std::string> names;
  for (const LinearLayer& layer : *layers) names.push_back(layer.name);
  return names;
}

TEST(CheckpointFiles, StrayFileBesideModelSafetensorsIsIgnored) {
  const fs::path clean = fixture_dir("files_clean", FixtureFormat::kAwq);
  const fs::path dir = fixture_dir("files_stray", FixtureFormat::kAwq);
  write_stray(dir / "consolidated.safetensors");
  write_stray(dir / "my_notes.safetensors");
  auto reference = Checkpoint::open(clean.string());
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  auto checkpoint = Checkpoint::open(dir.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(file_names(*checkpoint), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(checkpoint->tensor_names(), reference->tensor_names());
  EXPECT_FALSE(checkpoint->find("stray.extra.weight").has_value());
  // model.norm.weight's bytes are model.safetensors' (the stray copy is all 0x4000).
  auto norm = checkpoint->get("model.norm.weight");
  auto reference_norm = reference->get("model.norm.weight");
  ASSERT_TRUE(norm.ok() && reference_norm.ok());
  ASSERT_EQ(norm->bytes().size(), reference_norm->bytes().size());
  EXPECT_TRUE(
      std::equal(norm->bytes().begin(), norm->bytes().end(), reference_norm->bytes().begin()));
  EXPECT_EQ(plan_names(*checkpoint), plan_names(*reference));
  EXPECT_FALSE(plan_names(*checkpoint).empty());
}

TEST(CheckpointFiles, IndexedFolderLoadsOnlyTheListedShards) {
  const fs::path clean = fixture_dir("files_sharded_clean", FixtureFormat::kSharded);
  const fs::path dir = fixture_dir("files_sharded_stray", FixtureFormat::kSharded);
  write_stray(dir / "model.safetensors");  // even this name: the index decides
  write_stray(dir / "consolidated.safetensors");
  auto reference = Checkpoint::open(clean.string());
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  auto checkpoint = Checkpoint::open(dir.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(file_names(*checkpoint), file_names(*reference));
  EXPECT_EQ(checkpoint->files().size(), 2u);
  EXPECT_EQ(checkpoint->tensor_names(), reference->tensor_names());
  EXPECT_FALSE(checkpoint->find("stray.extra.weight").has_value());
  EXPECT_EQ(plan_names(*checkpoint), plan_names(*reference));
}

TEST(CheckpointFiles, OnlyOtherSafetensorsFilesIsAnErrorNamingThemAndTheRule) {
  const fs::path dir = fixture_dir("files_renamed", FixtureFormat::kAwq);
  fs::rename(dir / "model.safetensors", dir / "gptq_model-4bit-128g.safetensors");
  write_stray(dir / "consolidated.safetensors");
  const std::string where = dir.string();
  EXPECT_QUANT_ERROR(Checkpoint::open(where), ErrorCode::kNotFound, where.c_str(),
                     "no model.safetensors and no model.safetensors.index.json",
                     "only consolidated.safetensors, gptq_model-4bit-128g.safetensors",
                     "ignores other *.safetensors files", "rename");
}

TEST(CheckpointFiles, ShardsWithoutTheirIndexAreNotGuessed) {
  const fs::path dir = fixture_dir("files_no_index", FixtureFormat::kSharded);
  fs::remove(dir / "model.safetensors.index.json");
  EXPECT_QUANT_ERROR(Checkpoint::open(dir.string()), ErrorCode::kNotFound,
                     "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors",
                     "model.safetensors.index.json");
}

}  // namespace
}  // namespace qlinear::quant_test
