// Every case starts from a fixture checkpoint (src/fixtures) and applies one defect, either to
// the in-memory files before they are written or to the folder afterwards.
#include "bad_inputs/bad_inputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "fixtures/builder.h"
#include "io/safetensors.h"

namespace qlinear::bad_inputs {
namespace {

namespace fs = std::filesystem;
using fixture_internal::FixtureFiles;
using json = nlohmann::ordered_json;

constexpr const char* kQ = "model.layers.0.self_attn.q_proj";
constexpr const char* kUp = "model.layers.0.mlp.up_proj";

struct Recipe {
  BadInput input;
  FixtureFormat base = FixtureFormat::kGptqV1Sym4;  // quantize_config.json beside config.json
  std::function<void(FixtureFiles&)> edit_files;
  std::function<Status(const std::string& dir)> edit_written;
};

Status os_error(const std::string& what) {
  return make_error(ErrorCode::kIo, "{}: {}", what, std::strerror(errno));
}

Status replace_with_fifo(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (::mkfifo(path.c_str(), 0600) != 0) return os_error(path);
  return Status::ok_status();
}

Status replace_with_link(const std::string& path, const std::string& target) {
  std::error_code ec;
  fs::remove(path, ec);
  fs::create_symlink(target, path, ec);
  return ec ? make_error(ErrorCode::kIo, "{}: {}", path, ec.message()) : Status::ok_status();
}

Status replace_with_dir(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  fs::create_directories(path, ec);
  return ec ? make_error(ErrorCode::kIo, "{}: {}", path, ec.message()) : Status::ok_status();
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return out ? Status::ok_status() : os_error(path);
}

// Rewrites the header of a safetensors file (the writer refuses what these cases need).
Status edit_header(const std::string& path, const std::function<void(json&)>& edit) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) return make_error(ErrorCode::kInternal, "{}: too short", path);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  json header = json::parse(bytes.substr(8, length), nullptr, false);
  if (header.is_discarded()) return make_error(ErrorCode::kInternal, "{}: bad header", path);
  edit(header);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  return write_text(path, out + text + bytes.substr(8 + length));
}

void rename_key(json& object, const std::string& from, const std::string& to) {
  json value = object[from];
  object.erase(from);
  object[to] = value;
}

void erase_tensor(FixtureFiles& f, const std::string& name) {
  std::erase_if(f.tensors, [&](const auto& t) { return t.name == name; });
}

void erase_layer(FixtureFiles& f, const std::string& prefix) {
  std::erase_if(f.tensors, [&](const auto& t) { return t.name.rfind(prefix + ".", 0) == 0; });
}

BadInput meta(std::string name, std::string group, std::string defect, ErrorCode code,
              std::vector<std::string> mentions, std::vector<std::string> cli_args = {},
              int exit_code = 1) {
  BadInput b;
  b.name = std::move(name);
  b.group = std::move(group);
  b.defect = std::move(defect);
  b.code = code;
  b.mentions = std::move(mentions);
  b.cli_args = std::move(cli_args);
  b.exit_code = exit_code;
  return b;
}

// A checkpoint that loads, for the CLI cases.
Recipe valid_model(BadInput input) {
  Recipe r;
  r.input = std::move(input);
  r.base = FixtureFormat::kGptqV2Sym4;
  return r;
}

std::vector<Recipe> recipes() {
  std::vector<Recipe> out;
  const auto add = [&](Recipe r) { out.push_back(std::move(r)); };
  const std::string up(kUp);
  const std::string q(kQ);

  // --- hangs and unbounded reads ---------------------------------------------------------------
  add({meta("config_fifo", "hang", "config.json is a FIFO", ErrorCode::kRefusedFile,
            {"config.json", "FIFO"}),
       FixtureFormat::kAwq, nullptr,
       [](const std::string& d) { return replace_with_fifo(d + "/config.json"); }});
  add({meta("config_dev_zero", "hang", "config.json links to /dev/zero", ErrorCode::kRefusedFile,
            {"config.json", "/dev/zero"}),
       FixtureFormat::kAwq, nullptr,
       [](const std::string& d) { return replace_with_link(d + "/config.json", "/dev/zero"); }});
  add({meta("quant_config_fifo", "hang", "quantize_config.json is a FIFO", ErrorCode::kRefusedFile,
            {"quantize_config.json", "FIFO"}),
       FixtureFormat::kGptqV1Sym4, nullptr,
       [](const std::string& d) { return replace_with_fifo(d + "/quantize_config.json"); }});
  add({meta("index_fifo", "hang", "model.safetensors.index.json is a FIFO", ErrorCode::kRefusedFile,
            {"model.safetensors.index.json", "FIFO"}),
       FixtureFormat::kSharded, nullptr, [](const std::string& d) {
         return replace_with_fifo(d + "/model.safetensors.index.json");
       }});
  add({meta("config_over_limit", "hang", "config.json is 64 MiB + 1 byte (sparse)",
            ErrorCode::kRefusedFile, {"config.json", "64 MiB"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         std::error_code ec;
         fs::resize_file(d + "/config.json", (uint64_t{64} << 20) + 1, ec);
         return ec ? make_error(ErrorCode::kIo, "{}", ec.message()) : Status::ok_status();
       }});
  add({meta("config_nested_deep", "hang", "config.json nests arrays 100000 deep",
            ErrorCode::kCorrupt, {"config.json", "nested more than"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         return write_text(d + "/config.json",
                           "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
       }});

  // --- escaping the folder -----------------------------------------------------------------------
  add({meta("index_absolute_path", "escape", "weight_map names /etc/passwd",
            ErrorCode::kRefusedFile, {"model.safetensors.index.json", "/etc/passwd", "absolute"}),
       FixtureFormat::kSharded, nullptr, [](const std::string& d) {
         return write_text(d + "/model.safetensors.index.json",
                           R"({"weight_map": {"model.embed_tokens.weight": "/etc/passwd"}})");
       }});
  add({meta("index_parent_path", "escape", "weight_map names ../x.safetensors",
            ErrorCode::kRefusedFile, {"../x.safetensors", ".."}),
       FixtureFormat::kSharded, nullptr, [](const std::string& d) {
         return write_text(d + "/model.safetensors.index.json",
                           R"({"weight_map": {"model.embed_tokens.weight": "../x.safetensors"}})");
       }});
  add({meta("shard_link_outside", "escape", "model.safetensors links to a file outside the folder",
            ErrorCode::kRefusedFile, {"model.safetensors", "outside the model folder"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         const std::string outside = d + ".outside.safetensors";
         std::error_code ec;
         fs::rename(d + "/model.safetensors", outside, ec);
         if (ec) return make_error(ErrorCode::kIo, "{}", ec.message());
         return replace_with_link(d + "/model.safetensors", outside);
       }});

  // --- files that are not regular files
  // ------------------------------------------------------------
  add({meta("safetensors_is_directory", "type", "model.safetensors is a directory",
            ErrorCode::kRefusedFile, {"model.safetensors", "is a directory"}),
       FixtureFormat::kAwq, nullptr,
       [](const std::string& d) { return replace_with_dir(d + "/model.safetensors"); }});
  add({meta("safetensors_is_fifo", "type", "model.safetensors is a FIFO", ErrorCode::kRefusedFile,
            {"model.safetensors", "FIFO"}),
       FixtureFormat::kAwq, nullptr,
       [](const std::string& d) { return replace_with_fifo(d + "/model.safetensors"); }});
  add({meta("safetensors_dangling_link", "type", "model.safetensors is a dangling link",
            ErrorCode::kNotFound, {"model.safetensors", "dangling", "gone.safetensors"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         return replace_with_link(d + "/model.safetensors", "gone.safetensors");
       }});
  add({meta("config_link_loop", "type", "config.json is a link loop", ErrorCode::kRefusedFile,
            {"config.json", "loop"}),
       FixtureFormat::kAwq, nullptr,
       [](const std::string& d) { return replace_with_link(d + "/config.json", "config.json"); }});

  // --- loads that used to be silently wrong
  // ----------------------------------------------------------
  add({meta("missing_qweight", "silent",
            "up_proj.qweight deleted: its scales, qzeros, g_idx orphaned",
            ErrorCode::kMisconfigured, {up + ".scales", up + ".qzeros", "no qweight"}),
       FixtureFormat::kGptqV1Sym4, [up](FixtureFiles& f) { erase_tensor(f, up + ".qweight"); },
       nullptr});
  add({meta("empty_weight_map", "silent", "the index's weight_map is {}", ErrorCode::kCorrupt,
            {"model.safetensors.index.json", "weight_map", "empty"}),
       FixtureFormat::kSharded, nullptr, [](const std::string& d) {
         return write_text(d + "/model.safetensors.index.json", R"({"weight_map": {}})");
       }});
  add({meta("index_omits_shard", "silent", "the index lists only the first shard's tensors",
            ErrorCode::kNotFound, {"model.layers.1", "model.safetensors.index.json"}),
       FixtureFormat::kSharded, nullptr, [](const std::string& d) {
         return write_text(d + "/model.safetensors.index.json",
                           R"({"weight_map": {"model.embed_tokens.weight":
                               "model-00001-of-00002.safetensors"}})");
       }});
  add({meta("missing_layer", "silent", "every tensor of layer 1's down_proj deleted",
            ErrorCode::kNotFound, {"model.layers.1.mlp.down_proj", "missing"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { erase_layer(f, "model.layers.1.mlp.down_proj"); },
       nullptr});
  add({meta("missing_final_norm", "silent", "model.norm.weight deleted", ErrorCode::kNotFound,
            {"model.norm.weight", "missing"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { erase_tensor(f, "model.norm.weight"); },
       nullptr});
  add({meta("missing_lm_head", "silent", "lm_head deleted, tie_word_embeddings false",
            ErrorCode::kNotFound, {"lm_head", "tie_word_embeddings"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { erase_layer(f, "lm_head"); }, nullptr});
  add({meta("orphan_tensor", "silent", "an extra scales tensor no layer reads",
            ErrorCode::kMisconfigured, {"model.layers.0.mlp.extra.scales", "belong to no layer"}),
       FixtureFormat::kAwq,
       [](FixtureFiles& f) {
         auto t = *f.find(std::string(kUp) + ".scales");
         t.name = "model.layers.0.mlp.extra.scales";
         f.tensors.push_back(t);
       },
       nullptr});
  add({meta("config_hidden_size", "silent", "config.json hidden_size 512 (tensors say 256)",
            ErrorCode::kMisconfigured, {"hidden_size", "512", "model.embed_tokens.weight"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["hidden_size"] = 512; }, nullptr});
  add({meta("config_num_layers_low", "silent", "num_hidden_layers 1 (layer 1 exists)",
            ErrorCode::kMisconfigured, {"num_hidden_layers", "= 1", "model.layers.1"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["num_hidden_layers"] = 1; }, nullptr});
  add({meta("config_num_layers_high", "silent", "num_hidden_layers 3 (only 2 exist)",
            ErrorCode::kMisconfigured, {"num_hidden_layers", "= 3", "decoder layer 2"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["num_hidden_layers"] = 3; }, nullptr});
  add({meta("config_kv_heads", "silent", "num_key_value_heads 4 (k_proj holds 2 heads)",
            ErrorCode::kMisconfigured, {"num_key_value_heads", "= 4", "k_proj"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["num_key_value_heads"] = 4; }, nullptr});
  add({meta("config_head_dim", "silent", "head_dim 32 (q_proj holds 4 x 64)",
            ErrorCode::kMisconfigured, {"head_dim", "= 32", "q_proj"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["head_dim"] = 32; }, nullptr});
  add({meta("config_size_not_integer", "silent", "config.json hidden_size \"256\" (a string)",
            ErrorCode::kMisconfigured, {"hidden_size", "\"256\"", "positive integer"}),
       FixtureFormat::kAwq, [](FixtureFiles& f) { f.config["hidden_size"] = "256"; }, nullptr});
  add({meta("tensor_name_nul", "silent", "a tensor name with a NUL byte", ErrorCode::kCorrupt,
            {"model.norm\\x00.weight", "control characters"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         return edit_header(d + "/model.safetensors", [](json& h) {
           rename_key(h, "model.norm.weight", std::string("model.norm\0.weight", 18));
         });
       }});
  add({meta("tensor_name_ansi", "silent", "a tensor name with an ANSI escape", ErrorCode::kCorrupt,
            {"\\x1b[31m", "control characters"}),
       FixtureFormat::kAwq, nullptr, [](const std::string& d) {
         return edit_header(d + "/model.safetensors", [](json& h) {
           rename_key(h, "model.norm.weight", "model.norm.weight\x1b[31m");
         });
       }});
  add({meta("missing_quant_config", "message",
            "quantize_config.json deleted from a GPTQ checkpoint", ErrorCode::kNotFound,
            {"quantize_config.json", "no quantization config", "qweight"}),
       FixtureFormat::kGptqV1Sym4, nullptr, [](const std::string& d) {
         std::error_code ec;
         fs::remove(d + "/quantize_config.json", ec);
         return ec ? make_error(ErrorCode::kIo, "{}", ec.message()) : Status::ok_status();
       }});

  // --- FP8 NaN codes
  // ---------------------------------------------------------------------------------
  add({meta("fp8_nan_code", "nan", "an FP8 weight byte 0x7F (NaN)", ErrorCode::kCorrupt,
            {"model.layers.0.mlp.up_proj.weight", "0x7F", "[1, 2]", "NaN"}),
       FixtureFormat::kCtFp8Dynamic,
       [](FixtureFiles& f) {
         auto* t = f.find("model.layers.0.mlp.up_proj.weight");
         t->bytes[static_cast<std::size_t>(t->shape[1] + 2)] = std::byte{0x7F};
       },
       nullptr});
  add({meta("fp8_negative_nan_code", "nan", "an FP8 weight byte 0xFF (NaN)", ErrorCode::kCorrupt,
            {"model.layers.1.self_attn.o_proj.weight", "0xFF", "[0, 0]"}),
       FixtureFormat::kFp8Block,
       [](FixtureFiles& f) {
         f.find("model.layers.1.self_attn.o_proj.weight")->bytes[0] = std::byte{0xFF};
       },
       nullptr});

  // --- messages that blamed the wrong thing
  // ------------------------------------------------------------
  add({meta("awq_zero_point_false_mistag", "message",
            "AWQ zero_point false, but the qzeros are not the symmetric constant",
            ErrorCode::kMisconfigured, {"zero_point=false", "qzeros"}),
       FixtureFormat::kAwq,
       [](FixtureFiles& f) { f.config["quantization_config"]["zero_point"] = false; }, nullptr});
  add({meta("gptq_transposed_scales", "message", "q_proj.scales stored [N, G] instead of [G, N]",
            ErrorCode::kMisconfigured, {q + ".scales", "transposed"}),
       FixtureFormat::kGptqV2Sym4,
       [q](FixtureFiles& f) {
         auto* t = f.find(q + ".scales");
         t->shape = {t->shape[1], t->shape[0]};  // the bytes' order does not matter for shapes
       },
       nullptr});

  // --- bad arguments
  // -----------------------------------------------------------------------------------
  add(valid_model(meta("bench_huge_shape", "argument", "bench --shape 4294967296x4294967296",
                       ErrorCode::kInvalidArgument, {"--shape", "4294967296", "[1, 1048576]"},
                       {"bench", "--shape", "4294967296x4294967296", "--quick"})));
  add(valid_model(meta("bench_overflowing_shape", "argument",
                       "bench --shape 99999999999999999999x1", ErrorCode::kInvalidArgument,
                       {"--shape", "99999999999999999999"},
                       {"bench", "--shape", "99999999999999999999x1", "--quick"})));
  add(valid_model(meta("bench_negative_threads", "argument", "bench --threads -1",
                       ErrorCode::kInvalidArgument, {"--threads", "[0, 4096]"},
                       {"bench", "--threads", "-1"}, 2)));
  add(valid_model(
      meta("layer_negative_threads", "argument", "layer --threads -1", ErrorCode::kInvalidArgument,
           {"--threads", "[0, 4096]"},
           {"layer", "--model", "{dir}", "--name", kQ, "--input", "{dir}.io/x.safetensors",
            "--output", "{dir}.io/y.safetensors", "--threads", "-1"},
           2)));
  add(valid_model(meta("explain_zero_tp", "argument", "explain --tp 0", ErrorCode::kInvalidArgument,
                       {"--tp", "[1, 4096]"}, {"explain", "--model", "{dir}", "--tp", "0"}, 2)));
  add(valid_model(meta("example_negative_seed", "argument", "example --seed -1",
                       ErrorCode::kInvalidArgument, {"--seed"},
                       {"example", "--out", "{dir}.io/new", "--seed", "-1"}, 2)));

  // --- outputs
  // -----------------------------------------------------------------------------------------
  const std::vector<std::string> layer_args = {
      "layer", "--model", "{dir}", "--name", kQ, "--input", "{dir}.io/x.safetensors", "--output"};
  auto layer_to = [&](std::string target) {
    std::vector<std::string> args = layer_args;
    args.push_back(std::move(target));
    return args;
  };
  add(valid_model(meta("layer_output_dev_null", "overwrite", "layer --output /dev/null",
                       ErrorCode::kRefusedFile, {"/dev/null", "character device", "--force-output"},
                       layer_to("/dev/null"))));
  Recipe link =
      valid_model(meta("layer_output_symlink", "overwrite", "layer --output onto a symbolic link",
                       ErrorCode::kRefusedFile, {"y.safetensors", "symbolic link"},
                       layer_to("{dir}.io/y.safetensors")));
  link.edit_written = [](const std::string& d) {
    QL_RETURN_IF_ERROR(write_text(d + ".io/keep.txt", "keep"));
    return replace_with_link(d + ".io/y.safetensors", "keep.txt");
  };
  add(std::move(link));
  Recipe folder =
      valid_model(meta("layer_output_directory", "overwrite", "layer --output onto a directory",
                       ErrorCode::kRefusedFile, {"out.safetensors", "is a directory"},
                       layer_to("{dir}.io/out.safetensors")));
  folder.edit_written = [](const std::string& d) {
    return replace_with_dir(d + ".io/out.safetensors");
  };
  add(std::move(folder));
  Recipe fifo_input = valid_model(meta("layer_input_fifo", "hang", "layer --input is a FIFO",
                                       ErrorCode::kRefusedFile, {"x.safetensors", "FIFO"},
                                       layer_to("{dir}.io/y.safetensors")));
  fifo_input.edit_written = [](const std::string& d) {
    return replace_with_fifo(d + ".io/x.safetensors");
  };
  add(std::move(fifo_input));
  return out;
}

const std::vector<Recipe>& all_recipes() {
  static const std::vector<Recipe> kRecipes = recipes();
  return kRecipes;
}

// The input tensor x [2, 256] of the CLI cases that run `layer`, in "<dir>.io/" (beside the model
// folder: inside it, x would be one more tensor of the model).
Status write_layer_input(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir + ".io", ec);
  std::vector<float> x(2 * 256, 0.5f);
  SafetensorsWriter writer;
  writer.add_values("x", DType::kF32, {2, 256}, x);
  return writer.write(dir + ".io/x.safetensors");
}

}  // namespace

void PrintTo(const BadInput& input, std::ostream* os) { *os << input.name; }

const std::vector<BadInput>& all_bad_inputs() {
  static const std::vector<BadInput> kInputs = [] {
    std::vector<BadInput> inputs;
    for (const Recipe& r : all_recipes()) inputs.push_back(r.input);
    return inputs;
  }();
  return kInputs;
}

Status write_bad_input(const BadInput& input, const std::string& dir) {
  const Recipe* recipe = nullptr;
  for (const Recipe& r : all_recipes()) {
    if (r.input.name == input.name) recipe = &r;
  }
  if (recipe == nullptr) return make_error(ErrorCode::kNotFound, "no bad input {}", input.name);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove_all(dir + ".io", ec);
  fs::remove(dir + ".outside.safetensors", ec);
  FixtureFiles files;
  fixture_internal::build_fixture(recipe->base, FixtureOptions{}, files);
  if (recipe->edit_files) recipe->edit_files(files);
  QL_RETURN_IF_ERROR(fixture_internal::write_fixture_files(files, dir).status());
  if (!input.cli_args.empty()) QL_RETURN_IF_ERROR(write_layer_input(dir));
  if (recipe->edit_written) QL_RETURN_IF_ERROR(recipe->edit_written(dir));
  return Status::ok_status();
}

}  // namespace qlinear::bad_inputs
