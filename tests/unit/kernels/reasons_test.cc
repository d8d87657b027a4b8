// docs/reasons.md is the user-facing catalogue; it must list exactly the Reason enumerators with
// the same wording as reasons.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "kernels/reasons.h"

namespace qlinear {
namespace {

constexpr Reason kLastReason = Reason::kSimulated;

struct DocRow {
  std::string code;
  std::string meaning;
  std::string remedy;
};

std::string trim(const std::string& text) {
  const auto start = text.find_first_not_of(' ');
  if (start == std::string::npos) return "";
  return text.substr(start, text.find_last_not_of(' ') - start + 1);
}

// Rows of the first "| code | meaning | remedy |" table in docs/reasons.md.
std::vector<DocRow> read_doc_rows() {
  std::ifstream doc(std::string(QLINEAR_SOURCE_DIR) + "/docs/reasons.md");
  EXPECT_TRUE(doc.good()) << "cannot open docs/reasons.md";
  std::vector<DocRow> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(doc, line)) {
    if (line.rfind("| code | meaning | remedy |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    size_t start = 1;
    while (start < line.size()) {
      const size_t bar = line.find('|', start);
      if (bar == std::string::npos) break;
      cells.push_back(trim(line.substr(start, bar - start)));
      start = bar + 1;
    }
    EXPECT_EQ(cells.size(), 3u) << "malformed row: " << line;
    if (cells.size() == 3) rows.push_back({cells[0], cells[1], cells[2]});
  }
  return rows;
}

TEST(ReasonsTest, DocumentListsExactlyTheCatalogue) {
  const std::vector<DocRow> rows = read_doc_rows();
  const int count = static_cast<int>(kLastReason) + 1;
  ASSERT_EQ(rows.size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto reason = static_cast<Reason>(i);
    EXPECT_EQ(rows[i].code, reason_code(reason)) << "row " << i;
    EXPECT_EQ(rows[i].meaning, reason_description(reason)) << rows[i].code;
    EXPECT_EQ(rows[i].remedy, reason_remedy(reason)) << rows[i].code;
  }
}

TEST(ReasonsTest, CodesAreUniqueKebabCase) {
  std::set<std::string> seen;
  for (int i = 0; i <= static_cast<int>(kLastReason); ++i) {
    const std::string code(reason_code(static_cast<Reason>(i)));
    EXPECT_TRUE(seen.insert(code).second) << code;
    EXPECT_EQ(code.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos)
        << code;
    EXPECT_FALSE(reason_description(static_cast<Reason>(i)).empty()) << code;
  }
}

TEST(ReasonsTest, VerdictToStringIsCodeThenDetail) {
  EXPECT_EQ(Verdict::reject(Reason::kMissingIsa, "needs avx512_vnni").to_string(),
            "missing-isa: needs avx512_vnni");
  EXPECT_EQ(Verdict::reject(Reason::kAlignment, "").to_string(), "alignment");
  EXPECT_TRUE(Verdict::accept().ok());
  EXPECT_FALSE(Verdict::reject(Reason::kBits, "x").ok());
}

}  // namespace
}  // namespace qlinear
