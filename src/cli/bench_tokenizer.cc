// `qlinear bench-tokenizer`: encode and decode throughput on a text file, one thread. The file
// is cut into chunks at line ends (each at least --chunk-bytes), the unit a server tokenizes;
// bench/tokenizer_bench.sh runs Hugging Face's Rust tokenizer on the same chunks for the ratio.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/json_text.h"
#include "text/tokenizer.h"

namespace qlinear {
namespace {

struct BenchTokenizerOptions {
  std::string model;
  std::string text;
  size_t chunk_bytes = 16384;
  int repeat = 3;
  bool json = false;
};

std::vector<std::string_view> chunks_of(std::string_view text, size_t min_bytes) {
  std::vector<std::string_view> chunks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + min_bytes);
    const size_t newline = text.find('\n', end);
    end = newline == std::string_view::npos ? text.size() : newline + 1;
    chunks.push_back(text.substr(start, end - start));
    start = end;
  }
  return chunks;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Status run_bench(const BenchTokenizerOptions& o) {
  QL_ASSIGN_OR_RETURN(const text::Tokenizer tok, text::Tokenizer::load(o.model));
  QL_ASSIGN_OR_RETURN(const std::string corpus,
                      io_internal::read_text_file(o.text, kMaxTextInputBytes));
  const std::vector<std::string_view> chunks =
      chunks_of(corpus, std::max<size_t>(o.chunk_bytes, 1));
  std::vector<std::vector<int32_t>> ids(chunks.size());
  double encode_best = 1e30;
  double decode_best = 1e30;
  size_t tokens = 0;
  size_t decoded_bytes = 0;
  for (int r = 0; r < std::max(o.repeat, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < chunks.size(); ++i) {
      QL_ASSIGN_OR_RETURN(ids[i], tok.encode(chunks[i], false));
    }
    encode_best = std::min(encode_best, seconds_since(t0));
    const auto t1 = std::chrono::steady_clock::now();
    size_t bytes = 0;
    for (const auto& chunk_ids : ids) bytes += tok.decode(chunk_ids, false).size();
    decode_best = std::min(decode_best, seconds_since(t1));
    decoded_bytes = bytes;
  }
  for (const auto& chunk_ids : ids) tokens += chunk_ids.size();
  const double mb = static_cast<double>(corpus.size()) / 1e6;
  const double encode_mbs = mb / encode_best;
  const double decode_mbs = static_cast<double>(decoded_bytes) / 1e6 / decode_best;
  if (o.json) {
    const nlohmann::json out = {{"bytes", corpus.size()},
                                {"chunks", chunks.size()},
                                {"tokens", tokens},
                                {"encode_s", encode_best},
                                {"decode_s", decode_best},
                                {"encode_mb_s", encode_mbs},
                                {"decode_mb_s", decode_mbs},
                                {"threads", 1},
                                {"decoded_bytes", decoded_bytes}};
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print("{}: {:.2f} MB in {} chunks, {} tokens\n", o.text, mb, chunks.size(), tokens);
    fmt::print("encode: {:.2f} MB/s ({:.3f} s, best of {}, one thread)\n", encode_mbs, encode_best,
               std::max(o.repeat, 1));
    fmt::print("decode: {:.2f} MB/s ({:.3f} s)\n", decode_mbs, decode_best);
  }
  return Status::ok_status();
}

}  // namespace

void add_bench_tokenizer_command(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<BenchTokenizerOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-tokenizer", "Encode and decode throughput (MB/s, one thread) on a text file");
  cmd->add_option("--model,-m", opts->model, "Model folder holding tokenizer.json")->required();
  cmd->add_option("--text", opts->text, "Text file (UTF-8)")->required();
  cmd->add_option("--chunk-bytes", opts->chunk_bytes,
                  "Encode the file in chunks of at least this many bytes, cut at line ends");
  cmd->add_option("--repeat", opts->repeat, "Timed passes; the best one is reported");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts, &ctx] { run_command(ctx, [&]() -> Status { return run_bench(*opts); }); });
}

}  // namespace qlinear
