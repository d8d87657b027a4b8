#!/usr/bin/env bash
# Session 2026-12-07 (fifth), call 2: the tensor-core prefill attention's tests and sanitizers
# after ec48d4a (previous session's call 2, not run), prefill A/B at 64-256 rows, and where an
# 8B W4A16 decode step's time goes now (QLINEAR_STEP_SKIP, docs/runner.md).
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
source "$HERE/bench_ab.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
M8="--synthetic llama3-8b --format w4a16g128"
BM_TIMEOUT=45
echo "== prefill A/B $(date +%T)"
for P in 64 256; do
  bm 8b_p${P}_mma X=0 -- $M8 --prompt-len $P --gen-len 4 --kv-dtype bf16
  bm 8b_p${P}_f32k QLINEAR_CUDA_ATTENTION_MMA=0 -- $M8 --prompt-len $P --gen-len 4 --kv-dtype bf16
done
echo "== generate defaults $(date +%T)"
bin/qlinear example --format awq --out /tmp/ex_awq > /dev/null 2>&1
for m in "$HERE/../../models/default" /tmp/ex_awq; do
  for d in "" "--dtype f32 --kv-dtype f32"; do
    timeout 60 bin/qlinear generate --model "$m" --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 64 --temperature 0 \
      --device cuda $d --json 2>>"$OUT/generate.err" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(sys.argv[1], d["dtype"], d["kv_dtype"], "decode", round(d["decode_tokens_per_s"], 1), "ids", d["output_ids"][:12], [k["buckets"][0]["kernel"] for k in d["kernels"][:1]])' "$(basename $m)"
  done
done
echo "== loading a bf16 folder on the GPU host $(date +%T)"
python3 "$HERE/../../bench/rss/make_llama_folder.py" /tmp/synth1b_bf16 > /dev/null
idle=$( { /usr/bin/time -f '%M' bin/qlinear --version > /dev/null; } 2>&1 | tail -1)
echo "idle process $((idle / 1024)) MiB; folder $(( $(cat /tmp/synth1b_bf16/*.safetensors | wc -c) / 1048576 )) MiB"
for rep in 1 2; do
  for staged in 1 0; do
    QLINEAR_CUDA_STAGED_UPLOAD=$staged timeout 90 bin/qlinear generate --model /tmp/synth1b_bf16 --prompt-ids 1,2,3 --max-tokens 2 --ctx 256 \
      --device cuda --json 2>>"$OUT/generate.err" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print("synth-1b bf16 on cuda, staged uploads", sys.argv[1], ": load_s", round(d["load_s"], 2), "peak_rss_mib", d["peak_rss_mib"])' $staged
  done
done
for staged in 1 0 1 0; do
  QLINEAR_CUDA_STAGED_UPLOAD=$staged timeout 60 bin/qlinear bench-model --device cuda $M8 --prompt-len 16 --gen-len 4 --json 2>>"$OUT/bench.err" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print("8B w4a16 synthetic, staged uploads", sys.argv[1], ": load_s", round(d["load_s"], 2), "peak_rss_mib", d["peak_rss_mib"])' $staged
done
echo "== done $(date +%T)"
