// Shared helpers of the reference scripts: load a Hugging Face tokenizer folder into Hugging
// Face's own Rust tokenizer (the @anush008/tokenizers native npm build of `tokenizers` 0.22.2)
// the way transformers does, so its ids are what a transformers user gets.
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("@anush008/tokenizers");

function tokenContent(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  return value.content ?? null;
}

export function readConfig(dir) {
  const path = `${dir}/tokenizer_config.json`;
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : {};
}

// transformers 5 (TokenizersBackend.__init__/update_post_processor): when tokenizer_config.json
// sets add_bos_token or add_eos_token explicitly, the post-processor is replaced by
// TemplateProcessing "[bos] $A [eos]" (each present only when its flag is true and its token is
// set; a missing flag counts as false).
export function effectiveTokenizerJson(dir) {
  const json = JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8"));
  const config = readConfig(dir);
  if (!("add_bos_token" in config) && !("add_eos_token" in config)) return json;
  const bos = tokenContent(config.bos_token);
  const eos = tokenContent(config.eos_token);
  const addBos = config.add_bos_token === true && bos !== null;
  const addEos = config.add_eos_token === true && eos !== null;
  const idOf = (content) => {
    const added = json.added_tokens.find((t) => t.content === content);
    if (added) return added.id;
    return json.model.vocab[content];
  };
  const special = (content, typeId) => ({ SpecialToken: { id: content, type_id: typeId } });
  const single = [];
  if (addBos) single.push(special(bos, 0));
  single.push({ Sequence: { id: "A", type_id: 0 } });
  if (addEos) single.push(special(eos, 0));
  const pair = [...single];
  if (addBos) pair.push(special(bos, 1));
  pair.push({ Sequence: { id: "B", type_id: 1 } });
  if (addEos) pair.push(special(eos, 1));
  const specialTokens = {};
  for (const content of [addBos ? bos : null, addEos ? eos : null]) {
    if (content !== null) specialTokens[content] = { id: content, ids: [idOf(content)], tokens: [content] };
  }
  json.post_processor = { type: "TemplateProcessing", single, pair, special_tokens: specialTokens };
  return json;
}

export function loadReference(dir) {
  return Tokenizer.fromString(JSON.stringify(effectiveTokenizerJson(dir)));
}

// The text a golden case encodes: byte cases are decoded as transformers users' text would be
// (Python's "replace" policy and WHATWG's TextDecoder both substitute U+FFFD per maximal subpart).
export function caseText(c) {
  if (c.text !== undefined) return c.text;
  return new TextDecoder("utf-8").decode(Buffer.from(c.hex, "hex"));
}
