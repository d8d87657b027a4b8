#!/usr/bin/env bash
# Peak resident memory of loading a checkpoint folder on the CPU, against what the loaded model
# holds (issue 11: "peak RSS of loading stays within the prepared weights plus one layer").
# Writes a Llama-shaped bf16 folder with make_llama_folder.py (default: the synth-1b shape of
# ../shared/tools/llamacpp_peer.sh, 2.2 GB), optionally an AWQ quantization of it (qlinear
# quantize), then per folder: `qlinear generate --prompt-ids 1,2,3 --max-tokens 2 --ctx 256
# --json` (its peak_rss_mib) and `qlinear bench-model --model DIR --json` (bytes_per_token: the
# prepared linear weights a decode step reads, plus an embedding row and the few KV rows).
# Usage: bench/rss/load_rss.sh [QLINEAR_BINARY] [WORK_DIR]   (env AWQ=1: the AWQ folder too;
# LAYERS, HIDDEN, INTERMEDIATE: the shape)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
QL="${1:-$HERE/../../build/qlinear}"
WORK="${2:-$(mktemp -d)}"
mkdir -p "$WORK"
python3 "$HERE/make_llama_folder.py" "$WORK/bf16" --layers "${LAYERS:-16}" \
  --hidden "${HIDDEN:-2048}" --intermediate "${INTERMEDIATE:-8192}"
folders=(bf16)
if [[ "${AWQ:-0}" == 1 ]]; then
  "$QL" quantize --model "$WORK/bf16" --out "$WORK/awq" --format awq > /dev/null
  folders+=(awq)
fi
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; $("$QL" --version 2>/dev/null || true)"
# The process before it loads anything (libraries, allocator arenas): `qlinear --version`.
idle=$( { /usr/bin/time -f '%M' "$QL" --version > /dev/null; } 2>&1 | tail -1)
idle=$((idle / 1024))
echo "idle process (qlinear --version): $idle MiB resident"
printf '%-6s %9s %13s %13s %22s\n' folder "file MiB" "prepared MiB" "peak RSS MiB" "peak - idle - prepared"
for f in "${folders[@]}"; do
  file_mib=$(( $(cat "$WORK/$f"/*.safetensors | wc -c) / 1048576 ))
  rss=$("$QL" generate --model "$WORK/$f" --prompt-ids 1,2,3 --max-tokens 2 --ctx 256 --threads 1 \
    --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_rss_mib"])')
  prepared=$("$QL" bench-model --model "$WORK/$f" --prompt-len 4 --gen-len 4 --threads 1 \
    --json 2> /dev/null | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["bytes_per_token"] / 2**20))')
  printf '%-6s %9d %13d %13d %22d\n' "$f" "$file_mib" "$prepared" "$rss" \
    $((rss - idle - prepared))
done
