#!/usr/bin/env bash
# Session 2026-12-06 (second) call 4: the L2 prefetch of o_proj / gate_up after q/k/v
# (QLINEAR_L2_PREFETCH_MB) against none, the defaults end to end (the call 3 that never ran), the
# GPU tests of both, and the PyTorch decode peer in the same call.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 60 bin/cuda_device_tests --gtest_color=no --gtest_filter='*CudaWeightStreams.*:*CudaSwiGlu.*:*CudaNormFusion.*' > "$OUT/tests_kernels.log" 2>&1
echo "cuda_device_tests: exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/tests_kernels.log" | head -10
timeout 150 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:CudaOpsTest.*' > "$OUT/tests_model.log" 2>&1
echo "model_tests GPU filter, defaults: exit $?"
grep -E "^\[  (PASSED|FAILED) |prefetches|Failure" "$OUT/tests_model.log" | head -20
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
M1="--synthetic llama3.2-1b --format w4a16g128 --prompt-len 128"
N0="QLINEAR_NORM_FUSION=0 QLINEAR_SWIGLU_FUSION=0"
for round in 1 2; do
  for mb in 0 16 32 48; do bm 8b_pf$mb QLINEAR_L2_PREFETCH_MB=$mb -- $M8; done
done
bm 8b_fusions_off_pf0 $N0 QLINEAR_L2_PREFETCH_MB=0 -- $M8
bm 8b_pf0_ctx2048 QLINEAR_L2_PREFETCH_MB=0 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 2048
bm 8b_pf32_ctx2048 QLINEAR_L2_PREFETCH_MB=32 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 2048
bm 8b_b16_pf0 QLINEAR_L2_PREFETCH_MB=0 -- $M8 --batch 16
bm 8b_b16_pf32 QLINEAR_L2_PREFETCH_MB=32 -- $M8 --batch 16
bm 1b_pf0 QLINEAR_L2_PREFETCH_MB=0 -- $M1
bm 1b_pf32 QLINEAR_L2_PREFETCH_MB=32 -- $M1
echo "== peer $(date +%T)"
MODEL=llama3-8b QUANT=int4 COMPILE=0 timeout 150 python3 tools/gpu_decode_peer.py 2>&1 | tail -4
bm 8b_pf0_again QLINEAR_L2_PREFETCH_MB=0 -- $M8
bm 8b_pf32_again QLINEAR_L2_PREFETCH_MB=32 -- $M8
echo "== done $(date +%T)"
