// Writes tests/data/text/synthetic/<name>/tokenizer.json: small tokenizers that exercise the
// tokenizer.json components and options the real tokenizers of the goldens do not use (added
// token flags, Metaspace schemes, Digits, every Split behaviour, Strip/Lowercase/NFKC/
// StripAccents/Replace normalizers, unk without byte fallback, no decoder, end_of_word_suffix,
// merges as pairs). Their vocabularies are cut from the real Qwen3 (byte-level) and
// Llama-2/Mistral (SentencePiece-style) ones: the first ids and the merges among them, which is
// again a valid BPE. Hugging Face's own tokenizer then gives their goldens (make_goldens.mjs).
//
// usage: node tools/text/make_synthetic_tokenizers.mjs TOKENIZERS_DIR
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outRoot = join(here, "../../tests/data/text/synthetic");
const [tokenizersDir] = process.argv.slice(2);
if (!tokenizersDir) {
  console.error("usage: node make_synthetic_tokenizers.mjs TOKENIZERS_DIR");
  process.exit(2);
}

// The tokens with ids below maxId, plus (with singles) every one-character token, renumbered
// from maxId on: SentencePiece vocabularies keep their single characters at the end.
function subsetModel(name, maxId, pairs, singles = false) {
  const t = JSON.parse(readFileSync(join(tokenizersDir, name, "tokenizer.json"), "utf8"));
  const vocab = {};
  const extra = [];
  for (const [token, id] of Object.entries(t.model.vocab)) {
    if (id < maxId) {
      vocab[token] = id;
    } else if (singles && [...token].length === 1) {
      extra.push([id, token]);
    }
  }
  extra.sort((x, y) => x[0] - y[0]);
  extra.forEach(([, token], k) => (vocab[token] = maxId + k));
  const merges = [];
  for (const m of t.model.merges) {
    const [a, b] = typeof m === "string" ? m.split(" ") : m;
    const has = (k) => Object.hasOwn(vocab, k);
    if (has(a) && has(b) && has(a + b)) merges.push(pairs ? [a, b] : `${a} ${b}`);
  }
  return { ...t.model, vocab, merges };
}

const added = (id, content, flags = {}) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: false,
  ...flags,
});

const byteLevel = () => subsetModel("qwen3", 3000, true);
const sentencePiece = () => subsetModel("llama2", 3000, false, true);
const sentencePieceSize = Object.keys(sentencePiece().vocab).length;

const tokenizers = {
  // GPT-2 style: ByteLevel with its own regex and a prefix space; NFKC + Lowercase; added tokens
  // with every flag.
  bytelevel_flags: {
    normalizer: { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" }] },
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { ...byteLevel(), ignore_merges: false },
    added_tokens: [
      added(3000, "<|special|>", { special: true }),
      added(3001, "[MASK]", { special: true, lstrip: true, rstrip: true }),
      added(3002, "hello", { single_word: true, normalized: true }),
      added(3003, "<x>", { rstrip: true }),
      added(3004, "World", { normalized: true }),
      added(3005, "ab", { normalized: false }),
    ],
  },
  // SentencePiece-style with Metaspace (prepend_scheme "first", split), byte fallback, a fused
  // unknown token, and tokenizer_config.json's add_bos_token / add_eos_token rule.
  metaspace_first: {
    normalizer: null,
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: true },
    post_processor: null,
    decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: true },
    model: sentencePiece(),
    added_tokens: [
      added(0, "<unk>", { special: true }),
      added(1, "<s>", { special: true }),
      added(2, "</s>", { special: true }),
      added(sentencePieceSize, "[INST]", { special: true }),
      added(sentencePieceSize + 1, "[/INST]", { special: true }),
    ],
    config: { bos_token: "<s>", eos_token: "</s>", add_bos_token: true, add_eos_token: true },
  },
  // Metaspace "always" without splitting; Strip and a Regex Replace normalizer; a decoder of
  // Replace, ByteFallback, a trailing Strip and Fuse.
  metaspace_always_nosplit: {
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "Strip", strip_left: true, strip_right: true },
        { type: "Replace", pattern: { Regex: "\\s+" }, content: " " },
      ],
    },
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
      special_tokens: {
        "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] },
        "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] },
      },
    },
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "\u2581" }, content: " " },
        { type: "ByteFallback" },
        // Per token (before Fuse): Hugging Face's Strip panics on tokens shorter than start+stop
        // and on the empty fused token, so stop is tested where tokens are never empty.
        { type: "Strip", content: " ", start: 0, stop: 1 },
        { type: "Fuse" },
      ],
    },
    model: sentencePiece(),
    added_tokens: [added(0, "<unk>", { special: true }), added(1, "<s>", { special: true }), added(2, "</s>", { special: true })],
  },
  // Digits and every Split behaviour, NFD + StripAccents, then byte-level without its regex.
  digits_and_splits: {
    normalizer: { type: "Sequence", normalizers: [{ type: "NFD" }, { type: "StripAccents" }] },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Digits", individual_digits: true },
        { type: "Split", pattern: { String: "-" }, behavior: "MergedWithPrevious", invert: false },
        { type: "Split", pattern: { Regex: "[,;]" }, behavior: "Removed", invert: false },
        { type: "Split", pattern: { Regex: "\\s+" }, behavior: "MergedWithNext", invert: false },
        { type: "Split", pattern: { Regex: "\\p{L}+" }, behavior: "Contiguous", invert: true },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: byteLevel(),
    added_tokens: [],
  },
  // Llama-2's normalizer pair (Prepend + Replace) with a String Split, an unknown token that is
  // not fused and no byte fallback, no decoder (tokens joined by spaces), a Sequence
  // post-processor.
  prepend_unk_nodecoder: {
    normalizer: {
      type: "Sequence",
      normalizers: [{ type: "Prepend", prepend: "\u2581" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }],
    },
    pre_tokenizer: { type: "Split", pattern: { String: "\u2581" }, behavior: "MergedWithNext", invert: false },
    post_processor: {
      type: "Sequence",
      processors: [
        {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
          special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
        },
      ],
    },
    decoder: null,
    model: { ...sentencePiece(), byte_fallback: false, fuse_unk: false },
    added_tokens: [added(0, "<unk>", { special: true }), added(1, "<s>", { special: true }), added(2, "</s>", { special: true })],
  },
  // CLIP-style words: end_of_word_suffix "</w>", a fused unknown token, a Lowercase normalizer,
  // whitespace removed by a Split, a Fuse decoder; a small hand-made vocabulary.
  word_suffix: (() => {
    const vocab = { "<unk>": 0 };
    const token = (t) => {
      if (!Object.hasOwn(vocab, t)) vocab[t] = Object.keys(vocab).length;
    };
    for (const c of "abcdefghijklmnopqrstuvwxyz") {
      token(c);
      token(c + "</w>");
    }
    const merges = [];
    for (const [a, b] of [["t", "h"], ["th", "e</w>"], ["h", "e"], ["l", "l"], ["he", "ll"],
                          ["hell", "o</w>"], ["o", "r"], ["l", "d</w>"], ["or", "ld</w>"],
                          ["w", "orld</w>"], ["c", "a"], ["ca", "t</w>"], ["e", "r</w>"]]) {
      token(a + b);
      merges.push([a, b]);
    }
    return {
      normalizer: { type: "Lowercase" },
      pre_tokenizer: { type: "Split", pattern: { Regex: "\\s+" }, behavior: "Removed", invert: false },
      post_processor: null,
      decoder: { type: "Fuse" },
      model: {
        type: "BPE",
        dropout: null,
        unk_token: "<unk>",
        continuing_subword_prefix: null,
        end_of_word_suffix: "</w>",
        fuse_unk: true,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges,
      },
      added_tokens: [added(0, "<unk>", { special: true })],
    };
  })(),
};

for (const [name, spec] of Object.entries(tokenizers)) {
  const dir = join(outRoot, name);
  mkdirSync(dir, { recursive: true });
  const { config, ...rest } = spec;
  const json = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: rest.added_tokens,
    normalizer: rest.normalizer,
    pre_tokenizer: rest.pre_tokenizer,
    post_processor: rest.post_processor,
    decoder: rest.decoder,
    model: rest.model,
  };
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(json) + "\n");
  if (config) writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
  console.log(`${name}: ${Object.keys(rest.model.vocab).length} tokens, ${rest.model.merges.length} merges`);
}
