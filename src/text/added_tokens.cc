#include "text/added_tokens.h"

#include <algorithm>
#include <utility>

#include "text/unicode.h"
#include "text/utf8.h"

namespace qlinear::text {
namespace {

bool same_token(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.single_word == b.single_word && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized && a.special == b.special;
}

// The regex crate's \w$ on text[..end] and ^\w on text[begin..].
bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  size_t i = text.size();
  return is_word_char(previous_code_point(text, i));
}
bool starts_with_word(std::string_view text) {
  if (text.empty()) return false;
  size_t i = 0;
  return is_word_char(next_code_point(text, i));
}
// Start of the whitespace run ending `text` (\s*$), and end of the one starting it (^\s*).
size_t leftmost_space_at_end(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t i = end;
    if (!is_white_space(previous_code_point(text, i))) break;
    end = i;
  }
  return end;
}
size_t rightmost_space_at_start(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    if (!is_white_space(next_code_point(text, j))) break;
    i = j;
  }
  return i;
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view pattern, int32_t id) {
  if (pattern.empty()) return;
  first_byte[static_cast<unsigned char>(pattern[0])] = true;
  int32_t node = 0;
  for (const char ch : pattern) {
    const auto c = static_cast<unsigned char>(ch);
    auto& children = nodes[static_cast<size_t>(node)].children;
    auto it = std::lower_bound(children.begin(), children.end(), c,
                               [](const auto& child, unsigned char v) { return child.first < v; });
    if (it != children.end() && it->first == c) {
      node = it->second;
      continue;
    }
    const auto next = static_cast<int32_t>(nodes.size());
    children.insert(it, {c, next});
    nodes.emplace_back();
    node = next;
  }
  // Duplicate patterns keep the first token (Aho-Corasick reports the lowest pattern index).
  if (nodes[static_cast<size_t>(node)].token < 0) nodes[static_cast<size_t>(node)].token = id;
}

size_t AddedVocabulary::Trie::longest_at(std::string_view text, size_t i, int32_t* id) const {
  if (!first_byte[static_cast<unsigned char>(text[i])]) return 0;
  size_t best = 0;
  int32_t node = 0;
  for (size_t k = i; k < text.size(); ++k) {
    const auto c = static_cast<unsigned char>(text[k]);
    const auto& children = nodes[static_cast<size_t>(node)].children;
    auto it = std::lower_bound(children.begin(), children.end(), c,
                               [](const auto& child, unsigned char v) { return child.first < v; });
    if (it == children.end() || it->first != c) break;
    node = it->second;
    if (nodes[static_cast<size_t>(node)].token >= 0) {
      best = k + 1 - i;
      *id = nodes[static_cast<size_t>(node)].token;
    }
  }
  return best;
}

Result<AddedVocabulary> AddedVocabulary::build(const Json& list, std::string_view path,
                                               const BpeModel& model,
                                               const Normalizer* normalizer) {
  AddedVocabulary v;
  if (list.is_null()) return v;
  if (!list.is_array()) {
    return make_error(ErrorCode::kCorrupt, "{} must be an array, got {}", path, json_excerpt(list));
  }
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item = index_path(path, i);
    const Json& t = list[i];
    QL_RETURN_IF_ERROR(check_object(
        t, item, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"}));
    AddedToken token;
    QL_ASSIGN_OR_RETURN(token.content, get_string(t, item, "content"));
    QL_ASSIGN_OR_RETURN(token.special, get_bool(t, item, "special", false));
    QL_ASSIGN_OR_RETURN(token.single_word, get_bool(t, item, "single_word", false));
    QL_ASSIGN_OR_RETURN(token.lstrip, get_bool(t, item, "lstrip", false));
    QL_ASSIGN_OR_RETURN(token.rstrip, get_bool(t, item, "rstrip", false));
    QL_ASSIGN_OR_RETURN(token.normalized, get_bool(t, item, "normalized", !token.special));
    tokens.push_back(std::move(token));
  }

  // Hugging Face's add_tokens: specials are registered first, then ids are given in order,
  // the model vocab winning over the "id" written in the file (which it only warns about).
  std::vector<AddedToken> special_list;
  for (const AddedToken& t : tokens) {
    if (t.special && !t.content.empty() && v.special_contents_.insert(t.content).second) {
      special_list.push_back(t);
    }
  }
  std::vector<AddedToken> plain_list;
  std::unordered_map<std::string, std::vector<AddedToken>> existing;  // by content
  auto next_id = static_cast<int32_t>(model.vocab_entries());
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    std::vector<AddedToken>& same_content = existing[t.content];
    if (std::any_of(same_content.begin(), same_content.end(),
                    [&](const AddedToken& e) { return same_token(e, t); })) {
      continue;
    }
    int32_t id = -1;
    if (const auto it = v.by_content_.find(t.content); it != v.by_content_.end()) {
      id = it->second;
    } else if (const int32_t model_id = model.token_to_id(t.content); model_id >= 0) {
      id = model_id;
    } else {
      id = next_id++;
    }
    v.by_content_[t.content] = id;
    v.by_id_[id] = t;
    v.max_id_ = std::max(v.max_id_, id);
    if (v.special_contents_.count(t.content) == 0) plain_list.push_back(t);
    same_content.push_back(t);
  }

  // Matching sets: specials then the others, split by `normalized`; normalized patterns are the
  // contents passed through the normalizer.
  for (const std::vector<AddedToken>* group : {&special_list, &plain_list}) {
    for (const AddedToken& t : *group) {
      const int32_t id = v.by_content_.at(t.content);
      if (!t.normalized) {
        v.raw_trie_.insert(t.content, id);
        continue;
      }
      std::string pattern = t.content;
      if (normalizer != nullptr) {
        QL_ASSIGN_OR_RETURN(pattern, normalizer->normalize(t.content));
      }
      v.normalized_trie_.insert(pattern, id);
    }
  }
  return v;
}

void AddedVocabulary::split(std::string_view text, bool normalized_set,
                            std::vector<TextSegment>& out) const {
  const Trie& trie = normalized_set ? normalized_trie_ : raw_trie_;
  size_t start_offset = 0;
  size_t i = 0;
  while (i < text.size()) {
    int32_t id = -1;
    const size_t len = trie.longest_at(text, i, &id);
    if (len == 0) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t stop = i + len;
    i = stop;  // the next search continues after this match, whatever happens to it below
    const AddedToken& token = by_id_.at(id);
    if (token.single_word) {
      const bool start_space = start == 0 || !ends_with_word(text.substr(0, start));
      const bool stop_space = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {
      start = std::max(leftmost_space_at_end(text.substr(0, start)), start_offset);
    }
    if (token.rstrip) stop += rightmost_space_at_start(text.substr(stop));
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

std::optional<int32_t> AddedVocabulary::id_of(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::token(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::is_special_content(std::string_view content) const {
  return special_contents_.count(std::string(content)) > 0;
}

}  // namespace qlinear::text
