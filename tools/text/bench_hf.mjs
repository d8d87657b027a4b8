// Hugging Face's Rust tokenizer (the @anush008/tokenizers native build of tokenizers 0.22.2) on
// the same chunks as `qlinear bench-tokenizer`: encode and decode MB/s, one encode at a time
// (each call runs on one worker thread). Prints one JSON object.
//
// usage: node tools/text/bench_hf.mjs MODEL_DIR TEXT_FILE [--chunk-bytes N] [--repeat N]
import { readFileSync } from "node:fs";
import { loadReference } from "./reference.mjs";

const args = process.argv.slice(2);
const [modelDir, textFile] = args;
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const chunkBytes = option("--chunk-bytes", 16384);
const repeat = option("--repeat", 3);

// The same cut as qlinear: at least chunkBytes bytes, ending after a newline.
function chunksOf(buffer, minBytes) {
  const chunks = [];
  let start = 0;
  while (start < buffer.length) {
    let end = Math.min(buffer.length, start + minBytes);
    const newline = buffer.indexOf(0x0a, end);
    end = newline < 0 ? buffer.length : newline + 1;
    chunks.push(buffer.subarray(start, end).toString("utf8"));
    start = end;
  }
  return chunks;
}

const corpus = readFileSync(textFile);
const chunks = chunksOf(corpus, chunkBytes);
const tok = loadReference(modelDir);
let encodeBest = Infinity;
let decodeBest = Infinity;
let ids = [];
let decodedBytes = 0;
for (let r = 0; r < repeat; ++r) {
  let t0 = process.hrtime.bigint();
  const out = [];
  for (const chunk of chunks) {
    const e = await tok.encode(chunk, null, { addSpecialTokens: false });
    out.push(e.getIds());
  }
  encodeBest = Math.min(encodeBest, Number(process.hrtime.bigint() - t0) / 1e9);
  ids = out;
  t0 = process.hrtime.bigint();
  let bytes = 0;
  for (const chunkIds of ids) bytes += Buffer.byteLength(await tok.decode(chunkIds, false));
  decodeBest = Math.min(decodeBest, Number(process.hrtime.bigint() - t0) / 1e9);
  decodedBytes = bytes;
}
const tokens = ids.reduce((n, x) => n + x.length, 0);
console.log(JSON.stringify({
  bytes: corpus.length,
  chunks: chunks.length,
  tokens,
  encode_s: encodeBest,
  decode_s: decodeBest,
  encode_mb_s: corpus.length / 1e6 / encodeBest,
  decode_mb_s: decodedBytes / 1e6 / decodeBest,
  decoded_bytes: decodedBytes,
}));
