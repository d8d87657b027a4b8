#!/usr/bin/env bash
# Tokenizer throughput: `qlinear bench-tokenizer` and Hugging Face's Rust tokenizer
# (@anush008/tokenizers, tokenizers 0.22.2 native) on the same corpus and the same chunks, in one
# run, one thread each, alternating so both see the same machine load. Writes a markdown report.
#
# usage: bash bench/tokenizer_bench.sh [OUT.md]          (default bench/results/tokenizer.md)
# env:   QLINEAR (default build/qlinear, the release CLI), DATA (tokenizer files, default
#        build/test-data/text), CORPUS (default build/tokenizer_corpus.txt, made if missing),
#        MODELS (default "llama3 qwen3"), ROUNDS (alternations, default 3), CHUNKS (chunk sizes
#        in bytes, default "1024 16384")
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/tokenizer.md}
qlinear=${QLINEAR:-build/qlinear}
data=${DATA:-build/test-data/text}
corpus=${CORPUS:-build/tokenizer_corpus.txt}
models=${MODELS:-llama3 qwen3}
rounds=${ROUNDS:-3}
chunks=${CHUNKS:-1024 16384}

if [ ! -x "$qlinear" ]; then
  echo "no $qlinear: build the release CLI first (cmake --preset release && cmake --build --preset release)" >&2
  exit 1
fi
bash scripts/fetch_test_tokenizers.sh "$data"
[ -f "$corpus" ] || /usr/bin/python3 bench/make_tokenizer_corpus.py "$corpus"
(cd tools/text && npm ci --silent --no-audit --no-fund >/dev/null)

results=$(mktemp)
for model in $models; do
  for chunk in $chunks; do
    for round in $(seq 1 "$rounds"); do
      q=$("$qlinear" bench-tokenizer --model "$data/$model" --text "$corpus" --chunk-bytes "$chunk" \
            --repeat 1 --json)
      h=$(RAYON_NUM_THREADS=1 UV_THREADPOOL_SIZE=1 TOKENIZERS_PARALLELISM=false \
            node tools/text/bench_hf.mjs "$data/$model" "$corpus" --chunk-bytes "$chunk" --repeat 1)
      echo "{\"model\": \"$model\", \"chunk\": $chunk, \"round\": $round, \"qlinear\": $q, \"hf\": $h}" >>"$results"
      echo "$model chunk $chunk round $round: qlinear $q" >&2
      echo "$model chunk $chunk round $round: hf      $h" >&2
    done
  done
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
node - "$results" "$out" "$corpus" "$cpu" "$(nproc)" "$(git rev-parse --short HEAD)" <<'EOF'
const fs = require("fs");
const [results, out, corpus, cpu, cores, commit] = process.argv.slice(2);
const rows = fs.readFileSync(results, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const best = (xs, key) => Math.max(...xs.map((x) => x[key]));
const lines = [
  "# Tokenizer throughput: qlinear vs Hugging Face tokenizers",
  "",
  `Machine: ${cpu}, ${cores} cores (shared VM); commit ${commit}; ${new Date().toISOString().slice(0, 10)}.`,
  `Corpus: ${corpus}, ${(rows[0].qlinear.bytes / 1e6).toFixed(2)} MB (bench/make_tokenizer_corpus.py: ` +
    "English Debian docs, Python/C sources, CJK translations), cut into chunks of at least " +
    "the given size at line ends, each encoded (and its ids decoded) by one call; one thread each.",
  `qlinear: ${process.env.QLINEAR_BUILD ?? "build/qlinear (release preset)"}.`,
  "Command: `bash bench/tokenizer_bench.sh` (runs `qlinear bench-tokenizer --model DIR --text FILE` " +
    "and `node tools/text/bench_hf.mjs DIR FILE` alternately; best round of each is shown).",
  "Hugging Face: @anush008/tokenizers 0.6.0 = tokenizers 0.22.2 (Rust, native), `encode` per chunk, " +
    "RAYON_NUM_THREADS=1, UV_THREADPOOL_SIZE=1.",
  "",
  "| tokenizer | chunk | tokens (qlinear / HF) | encode qlinear MB/s | encode HF MB/s | encode ratio | decode qlinear MB/s | decode HF MB/s | decode ratio |",
  "|---|---|---|---|---|---|---|---|---|",
];
const groups = [...new Set(rows.map((r) => `${r.model} ${r.chunk}`))];
for (const group of groups) {
  const [model, chunk] = group.split(" ");
  const rs = rows.filter((r) => r.model === model && String(r.chunk) === chunk);
  const q = rs.map((r) => r.qlinear);
  const h = rs.map((r) => r.hf);
  const qe = best(q, "encode_mb_s"), he = best(h, "encode_mb_s");
  const qd = best(q, "decode_mb_s"), hd = best(h, "decode_mb_s");
  lines.push(`| ${model} | ${chunk} B (${q[0].chunks} chunks) | ${q[0].tokens} / ${h[0].tokens} | ${qe.toFixed(2)} | ${he.toFixed(2)} | ` +
             `${(qe / he).toFixed(2)}x | ${qd.toFixed(2)} | ${hd.toFixed(2)} | ${(qd / hd).toFixed(2)}x |`);
}
lines.push("", "Every round (MB/s, encode / decode):", "");
for (const r of rows) {
  lines.push(`- ${r.model}, ${r.chunk} B chunks, round ${r.round}: qlinear ${r.qlinear.encode_mb_s.toFixed(2)} / ` +
             `${r.qlinear.decode_mb_s.toFixed(2)}, HF ${r.hf.encode_mb_s.toFixed(2)} / ${r.hf.decode_mb_s.toFixed(2)}`);
}
fs.writeFileSync(out, lines.join("\n") + "\n");
console.log(lines.join("\n"));
EOF
rm -f "$results"
