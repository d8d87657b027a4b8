#!/usr/bin/env bash
# Session 2026-12-06 call 3: the new defaults (SwiGLU fusion on, norm fusion at one row) against
# both off, and the decoder tests under the defaults.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 90 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*' > "$OUT/tests_defaults.log" 2>&1
echo "model_tests GPU filter, defaults: exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/tests_defaults.log" | head -10
bm() {
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["decode_tokens_per_s"], 1), round(d.get("total_tokens_per_s", 0), 1))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
M1="--synthetic llama3.2-1b --format w4a16g128 --prompt-len 128"
N0="QLINEAR_NORM_FUSION=0 QLINEAR_SWIGLU_FUSION=0"
bm 8b_default X=1 -- $M8
bm 8b_off $N0 -- $M8
bm 8b_b16_default X=1 -- $M8 --batch 16
bm 8b_b16_off $N0 -- $M8 --batch 16
echo "== done $(date +%T)"
