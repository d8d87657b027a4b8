#!/usr/bin/env bash
# Session 2026-12-06 call 2: the fused-vs-unfused decoder tests without the env overrides, and
# the A/B of each fusion by batch.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 120 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*' > "$OUT/tests_decoder.log" 2>&1
echo "model_tests DecoderOnCuda.*: exit $?"
grep -E "^\[  (PASSED|FAILED) |fused norms|SwiGLU in|Failure" "$OUT/tests_decoder.log" | head -30
bm() {  # label env... -- bench-model args
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["decode_tokens_per_s"], 1), round(d.get("total_tokens_per_s", 0), 1))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
N0="QLINEAR_NORM_FUSION=0 QLINEAR_SWIGLU_FUSION=0"
NO="QLINEAR_NORM_FUSION=1 QLINEAR_SWIGLU_FUSION=0"
SO="QLINEAR_NORM_FUSION=0 QLINEAR_SWIGLU_FUSION=1"
B1="QLINEAR_NORM_FUSION=1 QLINEAR_SWIGLU_FUSION=1"
for round in 1 2; do
  bm 8b_none $N0 -- $M8
  bm 8b_norm $NO -- $M8
  bm 8b_swiglu $SO -- $M8
  bm 8b_both $B1 -- $M8
done
for b in 4 16; do
  bm 8b_b${b}_none $N0 -- $M8 --batch $b
  bm 8b_b${b}_norm $NO -- $M8 --batch $b
  bm 8b_b${b}_swiglu $SO -- $M8 --batch $b
done
echo "== done $(date +%T)"
