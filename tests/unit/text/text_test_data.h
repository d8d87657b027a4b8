// Where the text tests find their data: the committed goldens under tests/data/text/ and the
// real tokenizer files the `text_fetch_tokenizers` ctest fixture downloads into the build
// folder (scripts/fetch_test_tokenizers.sh). A missing file fails the test with a message
// saying how to get it; nothing is skipped.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace qlinear::text::testing {

inline std::string golden_dir() { return std::string(QLINEAR_SOURCE_DIR) + "/tests/data/text"; }

// Real tokenizers ("llama3", "qwen3", ...) live in the fetched data; "synthetic_<name>" ones in
// tests/data/text/synthetic/<name>.
inline std::string tokenizer_dir(const std::string& name) {
  const std::string prefix = "synthetic_";
  if (name.rfind(prefix, 0) == 0) return golden_dir() + "/synthetic/" + name.substr(prefix.size());
  return std::string(QLINEAR_TEXT_TEST_DATA) + "/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << path << " is missing";
    return nlohmann::json();
  }
  return nlohmann::json::parse(in);
}

// Loads a tokenizer once per test process; nullptr (after recording a failure) when missing.
inline const Tokenizer* tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  const std::string dir = tokenizer_dir(name);
  std::ifstream probe(dir + "/tokenizer.json");
  if (!probe) {
    ADD_FAILURE() << dir << "/tokenizer.json is missing. The text_fetch_tokenizers test fetches it "
                  << "(ctest runs it first); by hand: bash scripts/fetch_test_tokenizers.sh "
                  << QLINEAR_TEXT_TEST_DATA;
    return nullptr;
  }
  Result<Tokenizer> t = Tokenizer::load(dir);
  if (!t.ok()) {
    ADD_FAILURE() << "loading " << dir << ": " << t.status().to_string();
    return nullptr;
  }
  auto& slot = cache[name];
  slot = std::make_unique<Tokenizer>(std::move(t).value());
  return slot.get();
}

// Input text of a golden case: "text", or "hex" bytes (invalid UTF-8 cases).
inline std::string case_text(const nlohmann::json& c) {
  if (c.contains("text")) return c["text"].get<std::string>();
  const std::string hex = c["hex"].get<std::string>();
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

}  // namespace qlinear::text::testing
