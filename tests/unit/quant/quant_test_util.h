// Shared helpers for the quant/ tests: parse a JSON literal, resolve a layer, check errors.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "quant/quant_config_json.h"

namespace qlinear::quant_test {

inline constexpr std::string_view kSource = "config.json:quantization_config";

inline Result<std::unique_ptr<QuantConfig>> parse(std::string_view json_text,
                                                  const TensorCatalog& tensors = {},
                                                  const QuantOptions& options = {}) {
  return parse_quant_config_json(nlohmann::ordered_json::parse(json_text), kSource, tensors,
                                 options);
}

// Parses and asserts success.
inline std::unique_ptr<QuantConfig> parse_ok(std::string_view json_text,
                                             const TensorCatalog& tensors = {},
                                             const QuantOptions& options = {}) {
  auto config = parse(json_text, tensors, options);
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return nullptr;
  return std::move(config).value();
}

// Resolves and asserts success.
inline QuantSpec resolve_ok(const QuantConfig& config, std::string_view layer) {
  auto spec = config.resolve(layer);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  if (!spec.ok()) return QuantSpec{};
  EXPECT_EQ(spec->layer, layer);
  return std::move(spec).value();
}

}  // namespace qlinear::quant_test

// An error Result with `code` whose message contains every one of the given substrings.
#define EXPECT_QUANT_ERROR(result, error_code, ...)                                     \
  do {                                                                                  \
    const auto& ql_r = (result);                                                        \
    ASSERT_FALSE(ql_r.ok()) << "expected an error";                                     \
    EXPECT_EQ(ql_r.status().code(), (error_code)) << ql_r.status().to_string();         \
    for (std::string_view ql_part : {__VA_ARGS__}) {                                    \
      EXPECT_THAT(ql_r.status().message(), ::testing::HasSubstr(std::string(ql_part))); \
    }                                                                                   \
  } while (0)
